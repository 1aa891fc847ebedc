package chainsift;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import co.elastic.clients.elasticsearch._types.ElasticsearchException;
import co.elastic.clients.elasticsearch._types.FieldValue;
import co.elastic.clients.elasticsearch._types.SortOrder;
import co.elastic.clients.elasticsearch.core.ClosePointInTimeResponse;
import co.elastic.clients.elasticsearch.core.OpenPointInTimeResponse;
import co.elastic.clients.elasticsearch.core.SearchResponse;
import co.elastic.clients.elasticsearch.core.search.Hit;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Paging with the official Java client over chainsift's Elasticsearch-compatible routes: a point in
 * time (openPointInTime, search with pit and searchAfter, closePointInTime) walks every
 * transaction once, in the order of a plain sorted search; a closed point in time is
 * CS_CONTEXT_NOT_FOUND. Uses the connection and fixture helpers of {@link EsClientsTest}.
 */
class PagingTest {
  @BeforeAll
  static void connect() throws IOException {
    EsClientsTest.connect();
  }

  @AfterAll
  static void close() throws IOException {
    EsClientsTest.close();
  }

  @Test
  void pointInTimeWithSearchAfterVisitsEveryPageOnce() throws IOException {
    var es = EsClientsTest.es;
    OpenPointInTimeResponse pit = es.openPointInTime(o -> o.index("tx").keepAlive(k -> k.time("1m")));
    assertTrue(pit.id().startsWith("csp_"), pit.id());
    List<String> seen = new ArrayList<>();
    List<FieldValue> after = null;
    for (int page = 0; page < 20; page++) {
      List<FieldValue> from = after;
      SearchResponse<EsClientsTest.Tx> res = es.search(s -> {
        s.pit(p -> p.id(pit.id()).keepAlive(k -> k.time("1m"))).size(3)
            .sort(o -> o.field(f -> f.field("blockNumber.num").order(SortOrder.Desc)))
            .sort(o -> o.field(f -> f.field("hash").order(SortOrder.Asc)));
        if (from != null) s.searchAfter(from);
        return s;
      }, EsClientsTest.Tx.class);
      assertEquals(pit.id(), res.pitId());
      if (res.hits().hits().isEmpty()) break;
      for (Hit<EsClientsTest.Tx> h : res.hits().hits()) seen.add(h.source().hash());
      after = res.hits().hits().get(res.hits().hits().size() - 1).sort();
    }
    assertEquals(EsClientsTest.txHashes(t -> true, EsClientsTest.BY_BLOCK_DESC_HASH), seen);
    ClosePointInTimeResponse closed = es.closePointInTime(c -> c.id(pit.id()));
    assertTrue(closed.succeeded());
    assertEquals(1, closed.numFreed());
    ElasticsearchException gone = assertThrows(ElasticsearchException.class,
        () -> es.search(s -> s.pit(p -> p.id(pit.id())).size(1), EsClientsTest.Tx.class));
    assertEquals(404, gone.status());
    assertEquals("CS_CONTEXT_NOT_FOUND", gone.error().type());
  }
}
