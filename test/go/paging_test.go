// Paging with the official Go client over chainsift's Elasticsearch-compatible routes: a point in
// time with search_after (typed API: OpenPointInTime, Search with Pit, ClosePointInTime) and a
// scroll (esapi: Search WithScroll, Scroll, ClearScroll), each walking every transaction once in
// the order a plain sorted search gives.
package estest

import (
	"errors"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8/typedapi/core/search"
	"github.com/elastic/go-elasticsearch/v8/typedapi/types"
	"github.com/elastic/go-elasticsearch/v8/typedapi/types/enums/sortorder"
)

func TestTypedPointInTimeSearchAfter(t *testing.T) {
	pit, err := typed.OpenPointInTime("tx").KeepAlive("1m").Do(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pit.Id) < 5 || pit.Id[:4] != "csp_" {
		t.Fatalf("point-in-time id %q is not chainsift's", pit.Id)
	}
	size := 3
	var seen []string
	var after []types.FieldValue
	for page := 0; page < 20; page++ {
		req := &search.Request{
			Size: &size,
			Pit:  &types.PointInTimeReference{Id: pit.Id, KeepAlive: "1m"},
			Sort: []types.SortCombinations{
				types.SortOptions{SortOptions: map[string]types.FieldSort{"blockNumber.num": {Order: &sortorder.Desc}}},
				types.SortOptions{SortOptions: map[string]types.FieldSort{"hash": {Order: &sortorder.Asc}}},
			},
			SearchAfter: after,
		}
		// No index: a search on a point in time names none.
		res, err := typed.Search().Request(req).Do(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.PitId == nil || *res.PitId != pit.Id {
			t.Fatalf("pit_id %v, want %s", res.PitId, pit.Id)
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
	closed, err := typed.ClosePointInTime().Id(pit.Id).Do(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !closed.Succeeded || closed.NumFreed != 1 {
		t.Fatalf("close: %+v", closed)
	}
	// Closed: the id is unknown now.
	_, err = typed.Search().Request(&search.Request{Pit: &types.PointInTimeReference{Id: pit.Id}}).Do(ctx)
	if code := esCode(err); code != "CS_CONTEXT_NOT_FOUND" {
		t.Fatalf("search on a closed point in time: %v (code %q)", err, code)
	}
}

func TestEsapiScroll(t *testing.T) {
	res, err := es.Search(es.Search.WithContext(ctx), es.Search.WithIndex("tx"), es.Search.WithScroll(time.Minute),
		es.Search.WithSize(5), es.Search.WithSort("blockNumber.num:desc", "hash:asc"))
	page := decode(t, res, err)
	id, _ := page["_scroll_id"].(string)
	seen := hitIDs(page)
	for i := 0; i < 20 && len(hitIDs(page)) > 0; i++ {
		res, err = es.Scroll(es.Scroll.WithContext(ctx), es.Scroll.WithScrollID(id), es.Scroll.WithScroll(time.Minute))
		page = decode(t, res, err)
		id, _ = page["_scroll_id"].(string)
		seen = append(seen, hitIDs(page)...)
	}
	equal(t, "every page once, in order", seen, txsWhere(func(tx) bool { return true }, byBlockDescHash))
	res, err = es.ClearScroll(es.ClearScroll.WithContext(ctx), es.ClearScroll.WithScrollID(id))
	cleared := decode(t, res, err)
	if cleared["num_freed"] != float64(1) {
		t.Fatalf("clear scroll: %v", cleared)
	}
}

// esCode is the CS_ code of a typed-client error (its ErrorCause.Type), or "" for another error.
func esCode(err error) string {
	var esErr *types.ElasticsearchError
	if errors.As(err, &esErr) {
		return esErr.ErrorCause.Type
	}
	return ""
}
