package chainsift;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import co.elastic.clients.elasticsearch.ElasticsearchClient;
import co.elastic.clients.elasticsearch._types.mapping.Property;
import co.elastic.clients.elasticsearch.core.GetResponse;
import co.elastic.clients.elasticsearch.indices.GetMappingResponse;
import co.elastic.clients.elasticsearch.indices.get_mapping.IndexMappingRecord;
import co.elastic.clients.json.jackson.JacksonJsonpMapper;
import co.elastic.clients.transport.rest_client.RestClientTransport;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.util.Map;
import org.apache.http.Header;
import org.apache.http.HttpHost;
import org.apache.http.message.BasicHeader;
import org.elasticsearch.client.RestClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Introspection routes (api/routes/es/introspect.ts) through the Java client: the mapping
 * {@code indices().getMapping} decodes into its property variants, field caps, and a document by
 * id, over the fixture records test/java/run.sh indexes.
 */
class IntrospectTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static JsonNode info;
  static RestClient rest;
  static ElasticsearchClient es;

  @BeforeAll
  static void connect() throws IOException {
    String path = System.getenv("CHAINSIFT_FIXTURE_INFO");
    if (path == null) throw new IllegalStateException("CHAINSIFT_FIXTURE_INFO is not set: run test/java/run.sh, which starts the API");
    info = JSON.readTree(new File(path));
    URI api = URI.create(info.get("url").asText());
    rest = RestClient.builder(new HttpHost(api.getHost(), api.getPort(), api.getScheme()))
        .setPathPrefix(info.get("chainPath").asText())
        .setDefaultHeaders(new Header[] {new BasicHeader("Authorization", "Bearer " + info.get("token").asText())})
        .build();
    es = new ElasticsearchClient(new RestClientTransport(rest, new JacksonJsonpMapper()));
  }

  @AfterAll
  static void close() throws IOException {
    if (rest != null) rest.close();
  }

  @Test
  void getMappingDecodesThePropertyVariants() throws IOException {
    GetMappingResponse res = es.indices().getMapping(m -> m.index("tx"));
    assertEquals(1, res.result().size());
    Map.Entry<String, IndexMappingRecord> only = res.result().entrySet().iterator().next();
    assertTrue(only.getKey().endsWith("ethereum-ethereum-mainnet-tx"), only.getKey());
    Map<String, Property> props = only.getValue().mappings().properties();
    Property from = props.get("from");
    assertTrue(from.isKeyword(), from.toString());
    assertEquals("lowercase_address", from.keyword().normalizer());
    assertTrue(from.keyword().fields().get("raw").isKeyword());
    Property number = props.get("blockNumber");
    assertTrue(number.isObject(), number.toString());
    assertTrue(number.object().properties().get("num").isLong());
  }

  @Test
  void fieldCapsAndGetById() throws IOException {
    var caps = es.fieldCaps(f -> f.index("event").fields("args.*"));
    var name = caps.fields().get("args.name").get("keyword");
    assertTrue(name.searchable() && name.aggregatable());
    assertEquals("nested", caps.fields().get("args").get("nested").type());
    String hash = info.at("/records/tx/0/hash").asText();
    GetResponse<JsonNode> doc = es.get(g -> g.index("tx").id(hash), JsonNode.class);
    assertTrue(doc.found());
    assertEquals(hash, doc.source().get("hash").asText());
    assertFalse(es.exists(e -> e.index("tx").id("0xnope")).value());
  }
}
