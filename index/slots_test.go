package index

import "testing"

func TestPageOfCoversSlotsInOrder(t *testing.T) {
	page, off := 0, 0
	for s := range uint32(5 * maxPageSlots) {
		p, o := pageOf(s)
		if p != page || o != off {
			t.Fatalf("slot %d in page %d at %d, want page %d at %d", s, p, o, page, off)
		}
		if off++; off == pageSlots(page) {
			page, off = page+1, 0
		}
	}
	if pageSlots(0) != 16 || pageSlots(1) != 16 || pageSlots(2) != 32 || pageSlots(8) != 2048 || pageSlots(9) != maxPageSlots {
		t.Fatalf("page sizes %d %d %d %d %d", pageSlots(0), pageSlots(1), pageSlots(2), pageSlots(8), pageSlots(9))
	}
}
