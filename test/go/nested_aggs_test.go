// A nested aggregation through the official Go client's typed API (issue 30): nested(args) →
// filter(args.name = to) → cardinality of the recipients and reverse_nested back to the events,
// decoded as the client's typed aggregates (typed_keys) and compared with counts computed from
// the fixture records themselves.
package estest

import (
	"strings"
	"testing"

	"github.com/elastic/go-elasticsearch/v8/typedapi/types"
)

func TestTypedNestedFilterReverseNested(t *testing.T) {
	toArgs, events, recipients := 0, 0, map[string]bool{}
	for _, e := range fx.Records.Event {
		if e.Event != "Transfer" {
			continue
		}
		has := false
		for _, a := range e.Args {
			if a.Name == "to" {
				toArgs++
				recipients[a.Value.Hex] = true
				has = true
			}
		}
		if has {
			events++
		}
	}
	if toArgs == 0 {
		t.Fatal("the fixtures have no Transfer with a to argument")
	}
	body := `{"size":0,"query":{"term":{"event.raw":"Transfer"}},"aggs":{"args":{"nested":{"path":"args"},"aggs":{` +
		`"to":{"filter":{"term":{"args.name":"to"}},"aggs":{"recipients":{"cardinality":{"field":"args.value.hex"}},` +
		`"events":{"reverse_nested":{}}}}}}}}`
	res, err := typed.Search().Index("event").Raw(strings.NewReader(body)).Do(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nested := aggregate[*types.NestedAggregate](t, res.Aggregations, "args")
	to := aggregate[*types.FilterAggregate](t, nested.Aggregations, "to")
	if int(to.DocCount) != toArgs {
		t.Fatalf("filter doc_count %d, %d to arguments in the records", to.DocCount, toArgs)
	}
	card := aggregate[*types.CardinalityAggregate](t, to.Aggregations, "recipients")
	if int(card.Value) != len(recipients) {
		t.Fatalf("cardinality %d, %d distinct recipients in the records", card.Value, len(recipients))
	}
	back := aggregate[*types.ReverseNestedAggregate](t, to.Aggregations, "events")
	if int(back.DocCount) != events {
		t.Fatalf("reverse_nested doc_count %d, %d Transfer events with a to argument", back.DocCount, events)
	}
}
