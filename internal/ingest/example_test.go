package ingest_test

import (
	"errors"
	"fmt"

	"github.com/sketchd/sketchd/internal/ingest"
)

func ExampleAppendJSONHashes() {
	var hashes []uint64 // reuse it across requests: hashes[:0]
	hashes, err := ingest.AppendJSONHashes(hashes, []byte(`{"ids":[0,"A",""]}`), 10000)
	fmt.Println(int64(hashes[0]), int64(hashes[1]), hashes[2], err)

	_, err = ingest.AppendJSONHashes(hashes[:0], []byte(`{"ids":[1,2,3,1.5]}`), 10000)
	var e *ingest.Error
	if errors.As(err, &e) && errors.Is(err, ingest.ErrType) {
		fmt.Println(e.Detail())
	}
	// Output:
	// 2945182322382062539 243126998722523514 0 <nil>
	// ids[3] at offset 14: 1.5 is not an integer (floats are not ids)
}

func ExampleAppendLineHashes() {
	body := []byte("alice\r\nbob\n\ncarol")
	hashes, err := ingest.AppendLineHashes(nil, body, ingest.TextTexts, 10000)
	fmt.Println(len(hashes), err)

	_, err = ingest.AppendLineHashes(nil, []byte("1\n2\nthree\n"), ingest.TextInts, 10000)
	fmt.Println(err)
	// Output:
	// 3 <nil>
	// ingest: line 3 at offset 4: want a decimal integer (id_type=int), found "three"
}

func ExampleAppendJSONItems() {
	items, err := ingest.AppendJSONItems(nil, []byte(`{"items":[{"id":"u1","count":3},{"id":42,"count":1}]}`), 10000)
	for _, it := range items {
		fmt.Println(it.ID, it.Count)
	}
	fmt.Println(err)
	// Output:
	// "u1" 3
	// 42 1
	// <nil>
}
