// The official Go Elasticsearch client (github.com/elastic/go-elasticsearch/v8, its esapi and its
// typed API) against chainsift's Elasticsearch-compatible routes (api/routes/es/), over the API
// that test/go/run.sh starts on indexed fixture records (test/python/serve.ts). Expectations are
// computed from those records, or (aggregations) taken from the contract's own search endpoint
// (…/es/<kind>/search/) for the same query.
package estest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"
	"github.com/elastic/go-elasticsearch/v8/typedapi/core/search"
	"github.com/elastic/go-elasticsearch/v8/typedapi/types"
	"github.com/elastic/go-elasticsearch/v8/typedapi/types/enums/sortorder"
)

// quantity is a record's {num, raw} number.
type quantity struct {
	Num float64 `json:"num"`
}

// tx is the part of a transaction record the tests read: the typed hit of the typed API.
type tx struct {
	Hash        string   `json:"hash"`
	BlockHash   string   `json:"blockHash"`
	BlockNumber quantity `json:"blockNumber"`
	From        string   `json:"from"`
	To          *string  `json:"to"`
	GasUsed     quantity `json:"gasUsed"`
}

type block struct {
	Hash   string   `json:"hash"`
	Number quantity `json:"number"`
}

type event struct {
	Event string `json:"event"`
	Args  []struct {
		Name  string `json:"name"`
		Value struct {
			Hex string `json:"hex"`
		} `json:"value"`
	} `json:"args"`
}

// fixture is what serve.ts writes: where the API listens, its token and the indexed records.
type fixture struct {
	URL       string `json:"url"`
	Token     string `json:"token"`
	ChainPath string `json:"chainPath"`
	Records   struct {
		Block []block `json:"block"`
		Tx    []tx    `json:"tx"`
		Event []event `json:"event"`
	} `json:"records"`
}

var (
	fx    fixture
	es    *elasticsearch.Client
	typed *elasticsearch.TypedClient
	ctx   = context.Background()
)

func TestMain(m *testing.M) {
	path := os.Getenv("CHAINSIFT_FIXTURE_INFO")
	if path == "" {
		fmt.Fprintln(os.Stderr, "CHAINSIFT_FIXTURE_INFO is not set: run test/go/run.sh, which starts the API")
		os.Exit(1)
	}
	raw, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(raw, &fx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading the fixture info:", err)
		os.Exit(1)
	}
	cfg := elasticsearch.Config{Addresses: []string{fx.URL + fx.ChainPath}, ServiceToken: fx.Token}
	if es, err = elasticsearch.NewClient(cfg); err == nil {
		typed, err = elasticsearch.NewTypedClient(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// --- helpers -------------------------------------------------------------------------------

// decode reads an esapi answer, failing the test on an error status.
func decode(t *testing.T, res *esapi.Response, err error) map[string]any {
	t.Helper()
	if err != nil {
		t.Fatalf("request failed: %v", err)
	}
	defer res.Body.Close()
	if res.IsError() {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("answer %s: %s", res.Status(), body)
	}
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	return out
}

// searchEsapi runs an esapi search of `body` on `index`.
func searchEsapi(t *testing.T, index string, body string) map[string]any {
	t.Helper()
	res, err := es.Search(es.Search.WithContext(ctx), es.Search.WithIndex(index), es.Search.WithBody(strings.NewReader(body)))
	return decode(t, res, err)
}

// contract posts `body` to the contract's own endpoint …/es/<kind>/search/ and returns its answer.
func contract(t *testing.T, kind string, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, fx.URL+fx.ChainPath+"/"+kind+"/search/", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+fx.Token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("contract endpoint: %v", err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 200 {
		t.Fatalf("contract endpoint answered %d (%v)", res.StatusCode, err)
	}
	return out
}

func hitIDs(res map[string]any) []string {
	var ids []string
	for _, h := range res["hits"].(map[string]any)["hits"].([]any) {
		ids = append(ids, h.(map[string]any)["_id"].(string))
	}
	return ids
}

func total(res map[string]any) float64 {
	return res["hits"].(map[string]any)["total"].(map[string]any)["value"].(float64)
}

func equal[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d items %v, want %d %v", what, len(got), got, len(want), want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: item %d is %v, want %v (got %v, want %v)", what, i, got[i], want[i], got, want)
		}
	}
}

// txsWhere returns the hashes of the fixture transactions that `keep` selects, sorted by `less`.
func txsWhere(keep func(tx) bool, less func(a, b tx) bool) []string {
	var out []tx
	for _, x := range fx.Records.Tx {
		if keep(x) {
			out = append(out, x)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
	hashes := make([]string, len(out))
	for i, x := range out {
		hashes[i] = x.Hash
	}
	return hashes
}

func byHash(a, b tx) bool { return a.Hash < b.Hash }

func byBlockDescHash(a, b tx) bool {
	if a.BlockNumber.Num != b.BlockNumber.Num {
		return a.BlockNumber.Num > b.BlockNumber.Num
	}
	return a.Hash < b.Hash
}

// countOf runs _count with the esapi client.
func countOf(t *testing.T, index string, query string) float64 {
	t.Helper()
	res, err := es.Count(es.Count.WithContext(ctx), es.Count.WithIndex(index), es.Count.WithBody(strings.NewReader(`{"query":`+query+`}`)))
	return decode(t, res, err)["count"].(float64)
}

// --- esapi ---------------------------------------------------------------------------------

func TestEsapiInfoAndPing(t *testing.T) {
	infoRes, err := es.Info()
	info := decode(t, infoRes, err)
	if info["name"] != "chainsift" || info["cluster_name"] != "chainsift ethereum/ethereum/mainnet" {
		t.Fatalf("info: %v", info)
	}
	if v := info["version"].(map[string]any)["number"]; v != "8.19.4" {
		t.Fatalf("version.number %v", v)
	}
	res, err := es.Ping()
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("ping: %v %v", res, err)
	}
}

func TestEsapiRangeAndSort(t *testing.T) {
	lo := fx.Records.Block[0].Number.Num
	query := fmt.Sprintf(`{"range":{"blockNumber.num":{"gte":%v,"lte":%v}}}`, lo, lo+1)
	res := searchEsapi(t, "tx", `{"query":`+query+`,"sort":[{"hash":"asc"}],"size":100}`)
	want := txsWhere(func(x tx) bool { return x.BlockNumber.Num <= lo+1 }, byHash)
	equal(t, "hits in hash order", hitIDs(res), want)
	if total(res) != countOf(t, "tx", query) || int(total(res)) != len(want) {
		t.Fatalf("total %v, _count %v, expected %d", total(res), countOf(t, "tx", query), len(want))
	}
}

func TestEsapiTermAndNested(t *testing.T) {
	// The recipient of the first Transfer with a "to" argument, and every Transfer to it.
	var to string
	for _, e := range fx.Records.Event {
		for _, a := range e.Args {
			if e.Event == "Transfer" && a.Name == "to" && to == "" {
				to = a.Value.Hex
			}
		}
	}
	want := 0
	for _, e := range fx.Records.Event {
		for _, a := range e.Args {
			if e.Event == "Transfer" && a.Name == "to" && a.Value.Hex == to {
				want++
			}
		}
	}
	if to == "" || want == 0 {
		t.Fatal("the fixtures have no Transfer with a to argument")
	}
	query := fmt.Sprintf(`{"bool":{"filter":[{"term":{"event.raw":"Transfer"}},`+
		`{"nested":{"path":"args","query":{"bool":{"filter":[{"term":{"args.name":"to"}},{"term":{"args.value.hex":%q}}]}}}}]}}`, to)
	res := searchEsapi(t, "ethereum-ethereum-mainnet-event", `{"query":`+query+`,"size":100}`)
	if len(hitIDs(res)) != want || int(total(res)) != want || countOf(t, "event", query) != float64(want) {
		t.Fatalf("hits %d, total %v, expected %d", len(hitIDs(res)), total(res), want)
	}
}

func TestEsapiSearchAfterWalk(t *testing.T) {
	var seen []string
	after := ""
	for page := 0; page < 20; page++ {
		body := `{"size":5,"sort":[{"blockNumber.num":"desc"},{"hash":"asc"}]` + after + `}`
		hits := searchEsapi(t, "tx", body)["hits"].(map[string]any)["hits"].([]any)
		if len(hits) == 0 {
			break
		}
		for _, h := range hits {
			seen = append(seen, h.(map[string]any)["_id"].(string))
		}
		last, _ := json.Marshal(hits[len(hits)-1].(map[string]any)["sort"])
		after = `,"search_after":` + string(last)
	}
	equal(t, "every page once, in order", seen, txsWhere(func(tx) bool { return true }, byBlockDescHash))
}

func TestEsapiMsearch(t *testing.T) {
	body := `{"index":"block"}` + "\n" + `{"size":0}` + "\n" + `{}` + "\n" + `{"query":{"script":{"script":"1"}}}` + "\n" +
		`{"index":"tx"}` + "\n" + `{"size":1,"sort":[{"hash":"asc"}]}` + "\n"
	mres, err := es.Msearch(strings.NewReader(body), es.Msearch.WithContext(ctx))
	res := decode(t, mres, err)
	items := res["responses"].([]any)
	if len(items) != 3 {
		t.Fatalf("%d responses", len(items))
	}
	first, second, third := items[0].(map[string]any), items[1].(map[string]any), items[2].(map[string]any)
	if int(total(first)) != len(fx.Records.Block) || first["status"].(float64) != 200 {
		t.Fatalf("first: %v", first)
	}
	if second["status"].(float64) != 400 || second["error"].(map[string]any)["type"] != "CS_QUERY_UNSUPPORTED_CLAUSE" {
		t.Fatalf("second: %v", second)
	}
	equal(t, "third", hitIDs(third), txsWhere(func(tx) bool { return true }, byHash)[:1])
}

// The aggregations of a search with esapi (no typed_keys: plain names) equal the contract endpoint's.
func TestEsapiAggregationsEqualTheContractEndpoint(t *testing.T) {
	body := `{"size":0,"aggs":{"by_to":{"terms":{"field":"to","size":50}},` +
		`"per_block":{"histogram":{"field":"blockNumber.num","interval":1},"aggs":{"gas":{"sum":{"field":"gasUsed.num"}},` +
		`"senders":{"terms":{"field":"from"},"aggs":{"top":{"max":{"field":"gasUsed.num"}}}}}}}}`
	got, _ := json.Marshal(searchEsapi(t, "tx", body)["aggregations"])
	want, _ := json.Marshal(contract(t, "tx", body)["aggregations"])
	if !bytes.Equal(got, want) {
		t.Fatalf("aggregations differ:\n got %s\nwant %s", got, want)
	}
	var aggs struct {
		PerBlock struct {
			Buckets []struct {
				Key      float64 `json:"key"`
				DocCount int     `json:"doc_count"`
				Gas      struct {
					Value float64 `json:"value"`
				} `json:"gas"`
			} `json:"buckets"`
		} `json:"per_block"`
	}
	_ = json.Unmarshal(got, &aggs)
	if len(aggs.PerBlock.Buckets) != len(fx.Records.Block) {
		t.Fatalf("%d histogram buckets, %d blocks", len(aggs.PerBlock.Buckets), len(fx.Records.Block))
	}
	for _, b := range aggs.PerBlock.Buckets {
		n, gas := 0, 0.0
		for _, x := range fx.Records.Tx {
			if x.BlockNumber.Num == b.Key {
				n++
				gas += x.GasUsed.Num
			}
		}
		if b.DocCount != n || b.Gas.Value != gas {
			t.Fatalf("block %v: %d txs, gas %v; expected %d, %v", b.Key, b.DocCount, b.Gas.Value, n, gas)
		}
	}
}

func TestEsapiRefusalCarriesTheCode(t *testing.T) {
	res, err := es.Search(es.Search.WithIndex("tx"), es.Search.WithBody(strings.NewReader(`{"query":{"script":{"script":"1"}}}`)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Error struct {
			Type      string `json:"type"`
			RootCause []struct {
				Type string `json:"type"`
			} `json:"root_cause"`
		} `json:"error"`
		Status int `json:"status"`
	}
	_ = json.NewDecoder(res.Body).Decode(&body)
	if !res.IsError() || res.StatusCode != 400 || body.Status != 400 || body.Error.Type != "CS_QUERY_UNSUPPORTED_CLAUSE" ||
		len(body.Error.RootCause) != 1 || body.Error.RootCause[0].Type != "CS_QUERY_UNSUPPORTED_CLAUSE" {
		t.Fatalf("status %d, body %+v", res.StatusCode, body)
	}
}

// --- typed API -----------------------------------------------------------------------------

func TestTypedInfo(t *testing.T) {
	info, err := typed.Info().Do(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "chainsift" || info.Version.Int != "8.19.4" || info.Version.LuceneVersion == "" {
		t.Fatalf("info: %+v", info)
	}
	ok, err := typed.Ping().IsSuccess(ctx)
	if err != nil || !ok {
		t.Fatalf("ping: %v %v", ok, err)
	}
}

func TestTypedHitsSortedAndCounted(t *testing.T) {
	lo := fx.Records.Block[0].Number.Num
	query := fmt.Sprintf(`{"range":{"blockNumber.num":{"gte":%v}}}`, lo+1)
	res, err := typed.Search().Index("tx").
		Raw(strings.NewReader(`{"query":` + query + `,"sort":[{"blockNumber.num":"desc"},{"hash":"asc"}],"size":100}`)).Do(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range res.Hits.Hits {
		var x tx
		if err := json.Unmarshal(h.Source_, &x); err != nil {
			t.Fatal(err)
		}
		if h.Id_ == nil || *h.Id_ != x.Hash || x.BlockNumber.Num < lo+1 {
			t.Fatalf("hit %v with source %+v", h.Id_, x)
		}
		got = append(got, x.Hash)
	}
	equal(t, "typed hits in order", got, txsWhere(func(x tx) bool { return x.BlockNumber.Num >= lo+1 }, byBlockDescHash))
	count, err := typed.Count().Index("tx").Raw(strings.NewReader(`{"query":` + query + `}`)).Do(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Hits.Total == nil || res.Hits.Total.Value != count.Count || int(count.Count) != len(got) {
		t.Fatalf("total %+v, _count %d, hits %d", res.Hits.Total, count.Count, len(got))
	}
}

func TestTypedRequestAndSearchAfter(t *testing.T) {
	size := 4
	var seen []string
	var after []types.FieldValue
	for page := 0; page < 20; page++ {
		req := &search.Request{
			Size: &size,
			Sort: []types.SortCombinations{
				types.SortOptions{SortOptions: map[string]types.FieldSort{"blockNumber.num": {Order: &sortorder.Desc}}},
				types.SortOptions{SortOptions: map[string]types.FieldSort{"hash": {Order: &sortorder.Asc}}},
			},
			SearchAfter: after,
		}
		res, err := typed.Search().Index("tx").Request(req).Do(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits.Hits) == 0 {
			break
		}
		for _, h := range res.Hits.Hits {
			seen = append(seen, *h.Id_)
		}
		after = res.Hits.Hits[len(res.Hits.Hits)-1].Sort
	}
	equal(t, "every page once, in order", seen, txsWhere(func(tx) bool { return true }, byBlockDescHash))
}

func ptr[T any](v T) *T { return &v }

// aggregate is the typed aggregate `name` of `aggs`, which must be a T.
func aggregate[T types.Aggregate](t *testing.T, aggs map[string]types.Aggregate, name string) T {
	t.Helper()
	a, ok := aggs[name].(T)
	if !ok {
		t.Fatalf("aggregation %s is %T", name, aggs[name])
	}
	return a
}

// lines renders each bucket of a plain (contract endpoint) aggregation answer with `line`.
func lines(agg any, line func(bucket map[string]any) string) []string {
	var out []string
	for _, b := range agg.(map[string]any)["buckets"].([]any) {
		out = append(out, line(b.(map[string]any)))
	}
	return out
}

// typed_keys (which the typed client always sends): terms, histogram and their sub-aggregations
// come back as the client's typed aggregates, with the contract endpoint's buckets.
func TestTypedAggregationsWithSubAggregations(t *testing.T) {
	body := `{"size":0,"aggs":{"by_to":{"terms":{"field":"to","size":50}},` +
		`"by_block":{"terms":{"field":"blockNumber.num"},"aggs":{"gas":{"sum":{"field":"gasUsed.num"}}}},` +
		`"per_block":{"histogram":{"field":"blockNumber.num","interval":1},"aggs":{` +
		`"senders":{"terms":{"field":"from"},"aggs":{"top":{"max":{"field":"gasUsed.num"}}}},"avg_gas":{"avg":{"field":"gasUsed.num"}}}}}}`
	res, err := typed.Search().Index("tx").Raw(strings.NewReader(body)).Do(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := contract(t, "tx", body)["aggregations"].(map[string]any)

	byTo := aggregate[*types.StringTermsAggregate](t, res.Aggregations, "by_to")
	var gotTo []string
	for _, b := range byTo.Buckets.([]types.StringTermsBucket) {
		gotTo = append(gotTo, fmt.Sprintf("%v=%d", b.Key, b.DocCount))
	}
	wantTo := lines(want["by_to"], func(m map[string]any) string { return fmt.Sprintf("%v=%v", m["key"], m["doc_count"]) })
	equal(t, "terms buckets", gotTo, wantTo)

	byBlock := aggregate[*types.LongTermsAggregate](t, res.Aggregations, "by_block")
	var gotBlock []string
	for _, b := range byBlock.Buckets.([]types.LongTermsBucket) {
		gotBlock = append(gotBlock, fmt.Sprintf("%d=%d gas %v", b.Key, b.DocCount, *b.Aggregations["gas"].(*types.SumAggregate).Value))
	}
	wantBlock := lines(want["by_block"], func(m map[string]any) string {
		return fmt.Sprintf("%d=%v gas %v", int64(m["key"].(float64)), m["doc_count"], m["gas"].(map[string]any)["value"])
	})
	equal(t, "long terms buckets with a sum each", gotBlock, wantBlock)

	perBlock := aggregate[*types.HistogramAggregate](t, res.Aggregations, "per_block")
	var gotHist []string
	for _, b := range perBlock.Buckets.([]types.HistogramBucket) {
		line := fmt.Sprintf("%v=%d avg %v", float64(b.Key), b.DocCount, *b.Aggregations["avg_gas"].(*types.AvgAggregate).Value)
		for _, s := range b.Aggregations["senders"].(*types.StringTermsAggregate).Buckets.([]types.StringTermsBucket) {
			line += fmt.Sprintf(" %v=%d max %v", s.Key, s.DocCount, *s.Aggregations["top"].(*types.MaxAggregate).Value)
		}
		gotHist = append(gotHist, line)
	}
	wantHist := lines(want["per_block"], func(m map[string]any) string {
		senders := lines(m["senders"], func(s map[string]any) string {
			return fmt.Sprintf(" %v=%v max %v", s["key"], s["doc_count"], s["top"].(map[string]any)["value"])
		})
		return fmt.Sprintf("%v=%v avg %v", m["key"], m["doc_count"], m["avg_gas"].(map[string]any)["value"]) + strings.Join(senders, "")
	})
	equal(t, "histogram buckets with nested sub-aggregations", gotHist, wantHist)
	if len(gotHist) != len(fx.Records.Block) {
		t.Fatalf("%d histogram buckets for %d blocks", len(gotHist), len(fx.Records.Block))
	}
}

func TestTypedMsearch(t *testing.T) {
	size := 0
	res, err := typed.Msearch().Request(&[]types.MsearchRequestItem{
		types.MultisearchHeader{Index: []string{"block"}},
		types.MultisearchBody{Size: &size, Aggregations: map[string]types.Aggregations{"lowest": {Min: &types.MinAggregation{Field: ptr("number.num")}}}},
		types.MultisearchHeader{Index: []string{"tx"}},
		types.MultisearchBody{Query: &types.Query{Term: map[string]types.TermQuery{"nope": {Value: 1}}}},
	}).Do(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, ok := res.Responses[0].(*types.MultiSearchItem)
	if !ok {
		t.Fatalf("first is %T", res.Responses[0])
	}
	lowest := fx.Records.Block[0].Number.Num
	for _, b := range fx.Records.Block {
		lowest = min(lowest, b.Number.Num)
	}
	if first.Hits.Total.Value != int64(len(fx.Records.Block)) || float64(*first.Aggregations["lowest"].(*types.MinAggregate).Value) != lowest {
		t.Fatalf("first: %+v", first)
	}
	second, ok := res.Responses[1].(*types.ErrorResponseBase)
	if !ok || second.Status != 400 || second.Error.Type != "CS_QUERY_UNKNOWN_FIELD" {
		t.Fatalf("second is %T %+v", res.Responses[1], res.Responses[1])
	}
}

// A refused query surfaces as the typed client's *types.ElasticsearchError, with the code as its type.
func TestTypedRefusalIsAnElasticsearchError(t *testing.T) {
	_, err := typed.Search().Index("tx").Raw(strings.NewReader(`{"query":{"script":{"script":"1"}}}`)).Do(ctx)
	var esErr *types.ElasticsearchError
	if !errors.As(err, &esErr) {
		t.Fatalf("error %T %v", err, err)
	}
	if esErr.Status != 400 || esErr.ErrorCause.Type != "CS_QUERY_UNSUPPORTED_CLAUSE" || esErr.ErrorCause.Reason == nil {
		t.Fatalf("error %+v", esErr)
	}
	_, err = typed.Count().Index("tx").Raw(strings.NewReader(`{"query":{"wildcard":{"from":"0x*"}}}`)).Do(ctx)
	if !errors.As(err, &esErr) || esErr.Status != 400 || esErr.ErrorCause.Type != "CS_QUERY_UNSUPPORTED_CLAUSE" {
		t.Fatalf("count: %T %v", err, err)
	}
	_, err = typed.Search().Index("ethereum-ethereum-sepolia-tx").Do(ctx)
	if !errors.As(err, &esErr) || esErr.Status != 404 || esErr.ErrorCause.Type != "CS_UNKNOWN_KIND" {
		t.Fatalf("unknown index: %T %v", err, err)
	}
	_, err = typed.Indices.GetSettings().Index("tx").Do(ctx)
	if !errors.As(err, &esErr) || esErr.Status != 404 || esErr.ErrorCause.Type != "CS_ROUTE_NOT_FOUND" {
		t.Fatalf("an endpoint not served: %T %v", err, err)
	}
}
