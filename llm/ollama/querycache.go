package ollama

import (
	"container/list"
	"sync"
)

// queryCacheSize is how many query embeddings an embedder keeps: a few
// hundred kilobytes at 768 dimensions, and enough for the queries users
// repeat (the same search again, paging, a dashboard's fixed queries).
const queryCacheSize = 1024

// queryCache is a least-recently-used map from a query (and the model) to
// its vector, so that a repeated query costs the model nothing.
type queryCache struct {
	mu    sync.Mutex
	size  int
	order *list.List // front: most recently used; values are *queryEntry
	byKey map[string]*list.Element
}

type queryEntry struct {
	key string
	vec []float32
}

func newQueryCache(size int) *queryCache {
	return &queryCache{size: size, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *queryCache) get(key string) ([]float32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*queryEntry).vec, true
}

func (c *queryCache) put(key string, vec []float32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		el.Value.(*queryEntry).vec = vec
		c.order.MoveToFront(el)
		return
	}
	c.byKey[key] = c.order.PushFront(&queryEntry{key, vec})
	if c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*queryEntry).key)
	}
}
