// Introspection routes (api/routes/es/introspect.ts) through the Go client's typed API: the
// mapping typed.Indices.GetMapping decodes into its property types, field caps, and a document by
// id, over the fixture records of test/go/run.sh.
package estest

import (
	"strings"
	"testing"

	"github.com/elastic/go-elasticsearch/v8/typedapi/types"
)

func TestIndicesGetMappingDecodesThePropertyTypes(t *testing.T) {
	res, err := typed.Indices.GetMapping().Index("tx").Do(ctx)
	if err != nil {
		t.Fatalf("GetMapping: %v", err)
	}
	if len(res) != 1 {
		t.Fatalf("want one index, got %d", len(res))
	}
	for name, rec := range res {
		if !strings.HasSuffix(name, "ethereum-ethereum-mainnet-tx") {
			t.Fatalf("index name %q", name)
		}
		from, ok := rec.Mappings.Properties["from"].(*types.KeywordProperty)
		if !ok || from.Normalizer == nil || *from.Normalizer != "lowercase_address" {
			t.Fatalf("from: %#v", rec.Mappings.Properties["from"])
		}
		if _, ok := from.Fields["raw"].(*types.KeywordProperty); !ok {
			t.Fatalf("from.raw: %#v", from.Fields["raw"])
		}
		number, ok := rec.Mappings.Properties["blockNumber"].(*types.ObjectProperty)
		if !ok {
			t.Fatalf("blockNumber: %#v", rec.Mappings.Properties["blockNumber"])
		}
		if _, ok := number.Properties["num"].(*types.LongNumberProperty); !ok {
			t.Fatalf("blockNumber.num: %#v", number.Properties["num"])
		}
	}
}

func TestFieldCapsAndGetByID(t *testing.T) {
	caps, err := typed.FieldCaps().Index("event").Fields("args.*").Do(ctx)
	if err != nil {
		t.Fatalf("FieldCaps: %v", err)
	}
	name := caps.Fields["args.name"]["keyword"]
	if !name.Searchable || !name.Aggregatable || name.Type != "keyword" {
		t.Fatalf("args.name: %#v", caps.Fields["args.name"])
	}
	if caps.Fields["args"]["nested"].Type != "nested" {
		t.Fatalf("args: %#v", caps.Fields["args"])
	}
	want := fx.Records.Tx[0].Hash
	doc, err := typed.Get("tx", want).Do(ctx)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if !doc.Found || doc.Id_ != want || !strings.Contains(string(doc.Source_), want) {
		t.Fatalf("Get: found %v id %s source %s", doc.Found, doc.Id_, doc.Source_)
	}
	exists, err := typed.Exists("tx", "0xnope").Do(ctx)
	if err != nil || exists {
		t.Fatalf("Exists of a missing id: %v %v", exists, err)
	}
}
