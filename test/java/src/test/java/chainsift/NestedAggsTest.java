package chainsift;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import co.elastic.clients.elasticsearch._types.aggregations.Aggregate;
import co.elastic.clients.elasticsearch._types.aggregations.FilterAggregate;
import co.elastic.clients.elasticsearch._types.aggregations.NestedAggregate;
import co.elastic.clients.elasticsearch.core.SearchResponse;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.StringReader;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A nested aggregation through the official Java client (issue 30): nested(args) → filter(args.name
 * = to) → cardinality of the recipients and reverse_nested back to the events, decoded as the
 * client's typed aggregates and compared with counts computed from the fixture records. Uses the
 * connection and fixture helpers of {@link EsClientsTest}.
 */
class NestedAggsTest {
  @BeforeAll
  static void connect() throws IOException {
    EsClientsTest.connect();
  }

  @AfterAll
  static void close() throws IOException {
    EsClientsTest.close();
  }

  @Test
  void nestedFilterCardinalityAndReverseNested() throws IOException {
    int toArgs = 0;
    int events = 0;
    Set<String> recipients = new HashSet<>();
    for (JsonNode e : EsClientsTest.info.at("/records/event")) {
      if (!e.get("event").asText().equals("Transfer")) continue;
      boolean has = false;
      for (JsonNode a : e.get("args")) {
        if (!a.get("name").asText().equals("to")) continue;
        toArgs++;
        recipients.add(a.at("/value/hex").asText());
        has = true;
      }
      if (has) events++;
    }
    assertTrue(toArgs > 0, "the fixtures have a Transfer with a to argument");
    String body = "{\"size\":0,\"query\":{\"term\":{\"event.raw\":\"Transfer\"}},\"aggs\":{\"args\":{\"nested\":{\"path\":\"args\"},\"aggs\":{"
        + "\"to\":{\"filter\":{\"term\":{\"args.name\":\"to\"}},\"aggs\":{\"recipients\":{\"cardinality\":{\"field\":\"args.value.hex\"}},"
        + "\"events\":{\"reverse_nested\":{}}}}}}}}";
    SearchResponse<Void> res = EsClientsTest.es.search(s -> s.index("event").withJson(new StringReader(body)), Void.class);
    NestedAggregate nested = res.aggregations().get("args").nested();
    FilterAggregate to = nested.aggregations().get("to").filter();
    assertEquals(toArgs, to.docCount());
    Aggregate card = to.aggregations().get("recipients");
    assertEquals(recipients.size(), card.cardinality().value());
    assertEquals(events, to.aggregations().get("events").reverseNested().docCount());
  }
}
