#!/usr/bin/env python3
"""BM25 reference for questions about documents: SQLite FTS5 (porter +
unicode61) over ~200-word windows of each page.

Usage: pdfqa_bm25.py PAGES_JSON
PAGES_JSON is {"pages": [{"doc", "page", "text"}], "questions": [{"text",
"relevant": ["doc#page", ...]}]}, written by `docsift eval --qa` from the
text docsift extracted, so that both rank the same words. A window's rank
is its page's; each page counts once, at its best window. Prints JSON:
{"questions", "hit_at_1", "hit_at_3", "mrr_at_10"}.
"""
import json, re, sqlite3, sys

WINDOW = 200  # words per window
STRIDE = 100  # windows overlap by half, so no passage is cut in two only


def windows(text):
    words = text.split()
    if len(words) <= WINDOW:
        yield " ".join(words)
        return
    for start in range(0, len(words) - WINDOW // 2, STRIDE):
        yield " ".join(words[start:start + WINDOW])


def main():
    data = json.load(open(sys.argv[1], encoding="utf-8"))
    db = sqlite3.connect(":memory:")
    db.execute("create virtual table t using fts5(page unindexed, body, tokenize='porter unicode61')")
    db.executemany("insert into t values(?, ?)",
                   [(f'{p["doc"]}#{p["page"]}', w) for p in data["pages"] for w in windows(p["text"])])
    hit1 = hit3 = mrr = 0.0
    n = 0
    for q in data["questions"]:
        terms = re.findall(r"\w+", q["text"].lower())
        if not terms:
            continue
        n += 1
        rows = db.execute("select page from t where t match ? order by bm25(t) limit 200",
                          (" OR ".join('"%s"' % w for w in terms),)).fetchall()
        ranked = []
        for (page,) in rows:
            if page not in ranked:
                ranked.append(page)
        relevant = set(q["relevant"])
        hit1 += any(p in relevant for p in ranked[:1])
        hit3 += any(p in relevant for p in ranked[:3])
        mrr += next((1 / (i + 1) for i, p in enumerate(ranked[:10]) if p in relevant), 0.0)
    n = max(n, 1)
    print(json.dumps({"questions": n, "hit_at_1": hit1 / n, "hit_at_3": hit3 / n, "mrr_at_10": mrr / n}))


if __name__ == "__main__":
    main()
