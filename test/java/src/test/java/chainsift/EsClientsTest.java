package chainsift;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import co.elastic.clients.elasticsearch.ElasticsearchClient;
import co.elastic.clients.elasticsearch._types.ElasticsearchException;
import co.elastic.clients.elasticsearch._types.FieldValue;
import co.elastic.clients.elasticsearch._types.SortOrder;
import co.elastic.clients.elasticsearch._types.aggregations.Aggregate;
import co.elastic.clients.elasticsearch._types.aggregations.HistogramBucket;
import co.elastic.clients.elasticsearch._types.aggregations.LongTermsBucket;
import co.elastic.clients.elasticsearch._types.aggregations.StringTermsBucket;
import co.elastic.clients.elasticsearch._types.query_dsl.Query;
import co.elastic.clients.elasticsearch.core.InfoResponse;
import co.elastic.clients.elasticsearch.core.MsearchResponse;
import co.elastic.clients.elasticsearch.core.SearchResponse;
import co.elastic.clients.elasticsearch.core.msearch.MultiSearchResponseItem;
import co.elastic.clients.elasticsearch.core.search.Hit;
import co.elastic.clients.json.jackson.JacksonJsonpMapper;
import co.elastic.clients.transport.rest_client.RestClientTransport;
import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.apache.http.Header;
import org.apache.http.HttpHost;
import org.apache.http.message.BasicHeader;
import org.elasticsearch.client.RestClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The official Java Elasticsearch client (elasticsearch-java 8.19, RestClientTransport with
 * Jackson) against chainsift's Elasticsearch-compatible routes (api/routes/es/), over the API that
 * test/java/run.sh starts on indexed fixture records (test/python/serve.ts). Expectations are
 * computed from those records, or (aggregations) taken from the contract's own search endpoint
 * (…/es/&lt;kind&gt;/search/) for the same query.
 */
class EsClientsTest {
  /** A record's {num, raw} number. */
  @JsonIgnoreProperties(ignoreUnknown = true)
  public record Quantity(double num, String raw) {}

  /** The typed hit: the part of a transaction record the tests read. */
  @JsonIgnoreProperties(ignoreUnknown = true)
  public record Tx(String hash, String blockHash, Quantity blockNumber, String from, String to, Quantity gasUsed) {}

  static final ObjectMapper JSON = new ObjectMapper();
  static JsonNode info;
  static List<Tx> txs;
  static RestClient rest;
  static ElasticsearchClient es;

  @BeforeAll
  static void connect() throws IOException {
    String path = System.getenv("CHAINSIFT_FIXTURE_INFO");
    if (path == null) throw new IllegalStateException("CHAINSIFT_FIXTURE_INFO is not set: run test/java/run.sh, which starts the API");
    info = JSON.readTree(new File(path));
    txs = new ArrayList<>();
    for (JsonNode t : info.at("/records/tx")) txs.add(JSON.treeToValue(t, Tx.class));
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

  // --- helpers ---------------------------------------------------------------------------------

  static final Comparator<Tx> BY_HASH = Comparator.comparing(Tx::hash);
  static final Comparator<Tx> BY_BLOCK_DESC_HASH =
      Comparator.comparingDouble((Tx t) -> -t.blockNumber().num()).thenComparing(Tx::hash);

  static List<String> txHashes(Predicate<Tx> keep, Comparator<Tx> order) {
    return txs.stream().filter(keep).sorted(order).map(Tx::hash).toList();
  }

  static List<String> ids(SearchResponse<?> res) {
    return res.hits().hits().stream().map(Hit::id).toList();
  }

  static double lowestBlock() {
    return info.at("/records/block/0/number/num").asDouble();
  }

  /** The answer of the contract's own endpoint …/es/&lt;kind&gt;/search/ for a JSON body. */
  static JsonNode contract(String kind, String body) throws IOException, InterruptedException {
    HttpRequest req = HttpRequest.newBuilder(URI.create(info.get("url").asText() + info.get("chainPath").asText() + "/" + kind + "/search/"))
        .header("Authorization", "Bearer " + info.get("token").asText())
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body))
        .build();
    HttpResponse<String> res = HttpClient.newHttpClient().send(req, HttpResponse.BodyHandlers.ofString());
    assertEquals(200, res.statusCode(), res.body());
    return JSON.readTree(res.body());
  }

  static Query range(double gte, double lte) {
    return Query.of(q -> q.range(r -> r.number(n -> n.field("blockNumber.num").gte(gte).lte(lte))));
  }

  // --- scenarios -------------------------------------------------------------------------------

  @Test
  void infoAndPing() throws IOException {
    InfoResponse res = es.info();
    assertEquals("chainsift", res.name());
    assertEquals("chainsift ethereum/ethereum/mainnet", res.clusterName());
    assertEquals("8.19.4", res.version().number());
    assertFalse(res.version().luceneVersion().isEmpty());
    assertTrue(es.ping().value());
  }

  @Test
  void rangeAndSortWithTypedHitsAndCount() throws IOException {
    double lo = lowestBlock();
    SearchResponse<Tx> res = es.search(s -> s.index("tx").query(range(lo, lo + 1))
        .sort(o -> o.field(f -> f.field("hash").order(SortOrder.Asc))).size(100), Tx.class);
    List<String> want = txHashes(t -> t.blockNumber().num() <= lo + 1, BY_HASH);
    assertEquals(want, ids(res));
    for (Hit<Tx> h : res.hits().hits()) {
      assertEquals(h.id(), h.source().hash());
      assertTrue(h.source().blockNumber().num() <= lo + 1);
    }
    long count = es.count(c -> c.index("tx").query(range(lo, lo + 1))).count();
    assertEquals(count, res.hits().total().value());
    assertEquals(want.size(), count);
  }

  @Test
  void termAndNested() throws IOException {
    String to = null;
    int want = 0;
    for (JsonNode e : info.at("/records/event")) {
      if (!e.get("event").asText().equals("Transfer")) continue;
      for (JsonNode a : e.get("args")) {
        if (!a.get("name").asText().equals("to")) continue;
        if (to == null) to = a.at("/value/hex").asText();
        if (a.at("/value/hex").asText().equals(to)) want++;
      }
    }
    assertNotNull(to, "the fixtures have a Transfer with a to argument");
    String recipient = to;
    Query q = Query.of(b -> b.bool(bb -> bb
        .filter(f -> f.term(t -> t.field("event.raw").value("Transfer")))
        .filter(f -> f.nested(n -> n.path("args").query(nq -> nq.bool(nb -> nb
            .filter(x -> x.term(t -> t.field("args.name").value("to")))
            .filter(x -> x.term(t -> t.field("args.value.hex").value(recipient)))))))));
    SearchResponse<Map> res = es.search(s -> s.index("ethereum-ethereum-mainnet-event").query(q).size(100), Map.class);
    assertEquals(want, res.hits().hits().size());
    assertEquals(want, res.hits().total().value());
    assertEquals(want, es.count(c -> c.index("event").query(q)).count());
  }

  @Test
  void searchAfterWalkVisitsEveryPageOnce() throws IOException {
    List<String> seen = new ArrayList<>();
    List<FieldValue> after = null;
    for (int page = 0; page < 20; page++) {
      List<FieldValue> from = after;
      SearchResponse<Tx> res = es.search(s -> {
        s.index("tx").size(5)
            .sort(o -> o.field(f -> f.field("blockNumber.num").order(SortOrder.Desc)))
            .sort(o -> o.field(f -> f.field("hash").order(SortOrder.Asc)));
        if (from != null) s.searchAfter(from);
        return s;
      }, Tx.class);
      if (res.hits().hits().isEmpty()) break;
      for (Hit<Tx> h : res.hits().hits()) seen.add(h.source().hash());
      after = res.hits().hits().get(res.hits().hits().size() - 1).sort();
    }
    assertEquals(txHashes(t -> true, BY_BLOCK_DESC_HASH), seen);
  }

  @Test
  void msearchWithAnAggregationAndARefusal() throws IOException {
    MsearchResponse<Tx> res = es.msearch(m -> m
        .searches(s -> s.header(h -> h.index("block")).body(b -> b.size(0).aggregations("lowest", a -> a.min(x -> x.field("number.num")))))
        .searches(s -> s.header(h -> h.index("tx")).body(b -> b.query(q -> q.term(t -> t.field("nope").value(1)))))
        .searches(s -> s.header(h -> h.index("tx")).body(b -> b.size(1).sort(o -> o.field(f -> f.field("hash").order(SortOrder.Asc))))),
        Tx.class);
    List<MultiSearchResponseItem<Tx>> items = res.responses();
    assertEquals(3, items.size());
    assertTrue(items.get(0).isResult());
    assertEquals(info.at("/records/block").size(), items.get(0).result().hits().total().value());
    assertEquals(lowestBlock(), items.get(0).result().aggregations().get("lowest").min().value());
    assertTrue(items.get(1).isFailure());
    assertEquals(400, items.get(1).failure().status());
    assertEquals("CS_QUERY_UNKNOWN_FIELD", items.get(1).failure().error().type());
    assertEquals(txHashes(t -> true, BY_HASH).subList(0, 1), items.get(2).result().hits().hits().stream().map(Hit::id).toList());
  }

  /** Terms (keyword and long), a histogram and their sub-aggregations, read through the client's typed aggregates. */
  @Test
  void aggregationsAndSubAggregationsEqualTheContractEndpoint() throws IOException, InterruptedException {
    String body = "{\"size\":0,\"aggs\":{\"by_to\":{\"terms\":{\"field\":\"to\",\"size\":50}},"
        + "\"by_block\":{\"terms\":{\"field\":\"blockNumber.num\"},\"aggs\":{\"gas\":{\"sum\":{\"field\":\"gasUsed.num\"}}}},"
        + "\"per_block\":{\"histogram\":{\"field\":\"blockNumber.num\",\"interval\":1},\"aggs\":{"
        + "\"senders\":{\"terms\":{\"field\":\"from\"},\"aggs\":{\"top\":{\"max\":{\"field\":\"gasUsed.num\"}}}},"
        + "\"avg_gas\":{\"avg\":{\"field\":\"gasUsed.num\"}}}}}}";
    SearchResponse<Void> res = es.search(s -> s.index("tx").withJson(new java.io.StringReader(body)), Void.class);
    JsonNode want = contract("tx", body).get("aggregations");
    Map<String, Aggregate> aggs = res.aggregations();

    List<String> got = new ArrayList<>();
    for (StringTermsBucket b : aggs.get("by_to").sterms().buckets().array()) got.add(b.key().stringValue() + "=" + b.docCount());
    List<String> expected = new ArrayList<>();
    for (JsonNode b : want.at("/by_to/buckets")) expected.add(b.get("key").asText() + "=" + b.get("doc_count").asLong());
    assertEquals(expected, got);
    assertFalse(got.isEmpty());

    got.clear();
    expected.clear();
    for (LongTermsBucket b : aggs.get("by_block").lterms().buckets().array())
      got.add(b.key() + "=" + b.docCount() + " gas " + b.aggregations().get("gas").sum().value());
    for (JsonNode b : want.at("/by_block/buckets"))
      expected.add(b.get("key").asLong() + "=" + b.get("doc_count").asLong() + " gas " + b.at("/gas/value").asDouble());
    assertEquals(expected, got);

    got.clear();
    expected.clear();
    for (HistogramBucket b : aggs.get("per_block").histogram().buckets().array()) {
      StringBuilder line = new StringBuilder(b.key() + "=" + b.docCount() + " avg " + b.aggregations().get("avg_gas").avg().value());
      for (StringTermsBucket s : b.aggregations().get("senders").sterms().buckets().array())
        line.append(" ").append(s.key().stringValue()).append("=").append(s.docCount()).append(" max ").append(s.aggregations().get("top").max().value());
      got.add(line.toString());
    }
    for (JsonNode b : want.at("/per_block/buckets")) {
      StringBuilder line = new StringBuilder(b.get("key").asDouble() + "=" + b.get("doc_count").asLong() + " avg " + b.at("/avg_gas/value").asDouble());
      for (JsonNode s : b.at("/senders/buckets"))
        line.append(" ").append(s.get("key").asText()).append("=").append(s.get("doc_count").asLong()).append(" max ").append(s.at("/top/value").asDouble());
      expected.add(line.toString());
    }
    assertEquals(expected, got);
    assertEquals(info.at("/records/block").size(), got.size());
  }

  /** Refusals surface as the client's ElasticsearchException, with the CS_ code as the error type. */
  @Test
  void refusalsCarryTheirCode() {
    ElasticsearchException script = assertThrows(ElasticsearchException.class,
        () -> es.search(s -> s.index("tx").query(q -> q.withJson(new java.io.StringReader("{\"script\":{\"script\":\"1\"}}"))), Tx.class));
    assertEquals(400, script.status());
    assertEquals("CS_QUERY_UNSUPPORTED_CLAUSE", script.error().type());
    assertEquals("CS_QUERY_UNSUPPORTED_CLAUSE", script.error().rootCause().get(0).type());
    assertNotNull(script.error().reason());

    ElasticsearchException count = assertThrows(ElasticsearchException.class,
        () -> es.count(c -> c.index("tx").query(q -> q.wildcard(w -> w.field("from").value("0x*")))));
    assertEquals(400, count.status());
    assertEquals("CS_QUERY_UNSUPPORTED_CLAUSE", count.error().type());

    ElasticsearchException from = assertThrows(ElasticsearchException.class, () -> es.search(s -> s.index("tx").from(9_995).size(10), Tx.class));
    assertEquals("CS_RESULT_WINDOW_TOO_LARGE", from.error().type());

    ElasticsearchException index = assertThrows(ElasticsearchException.class,
        () -> es.search(s -> s.index("ethereum-ethereum-sepolia-tx"), Tx.class));
    assertEquals(404, index.status());
    assertEquals("CS_UNKNOWN_KIND", index.error().type());

    ElasticsearchException settings = assertThrows(ElasticsearchException.class, () -> es.indices().getSettings(g -> g.index("tx")));
    assertEquals(404, settings.status());
    assertEquals("CS_ROUTE_NOT_FOUND", settings.error().type());
  }
}
