package chainsift;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import co.elastic.clients.elasticsearch.ElasticsearchClient;
import co.elastic.clients.elasticsearch._types.mapping.Property;
import co.elastic.clients.elasticsearch.core.GetResponse;
import co.elastic.clients.elasticsearch.indices.GetMappingResponse;
import co.elastic.clients.elasticsearch.indices.get_mapping.IndexMappingRecord;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Introspection routes (api/routes/es/introspect.ts) through the Java client: the mapping
 * {@code indices().getMapping} decodes into its property variants, field caps, and a document by
 * id, over the fixture records test/java/run.sh indexes.
 */
class IntrospectTest {
  static JsonNode info;
  static ElasticsearchClient es;

  /** The connection of {@link EsClientsTest} (the same fixture API and token). */
  @BeforeAll
  static void connect() throws IOException {
    EsClientsTest.connect();
    info = EsClientsTest.info;
    es = EsClientsTest.es;
  }

  @AfterAll
  static void close() throws IOException {
    EsClientsTest.close();
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
