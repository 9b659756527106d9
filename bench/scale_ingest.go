package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// ingest uploads documents until their chunks reach cfg.Chunks and waits
// for every job to end. Documents of at most chunkTargetWords words are
// one chunk each; longer ones are uploaded until the chunks of the jobs
// ended so far, a document on average, say that enough are.
//
// The uploads are what is measured, so the waiting costs little: asking
// GET /jobs/{id} of every document would double the requests the server
// and the uploaders (which share its machine here) handle. A sample of the
// jobs, every sampleJobsEvery-th, is followed while the uploads go on, for
// the chunks a document makes and the progress; the last one uploaded is
// waited for; then the owners' document lists, a page of 1,000 a request,
// give every document's status and chunks, and the few jobs still running
// are waited for one by one. Jobs are claimed in the order they were
// queued, so once the last has ended nearly all have.
func (s *childServer) ingest(ctx context.Context, gen *scaleText, cfg ScaleConfig, res *ScaleResult) error {
	docs := make(chan int)
	type upload struct {
		doc   int
		jobID string
	}
	uploads := make(chan upload, 4096)
	errc := make(chan error, cfg.Uploaders+1)
	var wg sync.WaitGroup
	for range cfg.Uploaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range docs {
				name, text := fmt.Sprintf("doc-%07d.txt", i), ""
				if gen.corpus != nil {
					name, text = gen.corpus[i].ID, corpusText(gen.corpus[i])
				} else {
					text = gen.document(i, cfg.Words)
				}
				body, _ := json.Marshal(map[string]any{"owner_id": s.ownerOf(i), "text": text, "name": name})
				var up struct {
					JobID string `json:"job_id"`
				}
				if err := s.call(ctx, http.MethodPost, "/upload/text", body, &up); err != nil {
					errc <- fmt.Errorf("bench: scale: upload: %w", err)
					return
				}
				uploads <- upload{i, up.JobID}
			}
		}()
	}
	var (
		mu                    sync.Mutex
		sampled, sampleChunks int
		last                  upload // the last document uploaded
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for up := range uploads {
			mu.Lock()
			if up.doc >= last.doc {
				last = up
			}
			mu.Unlock()
			if up.doc%sampleJobsEvery != 0 {
				continue
			}
			n, err := s.waitJob(ctx, up.jobID)
			if err != nil {
				errc <- err
				return
			}
			mu.Lock()
			sampled++
			sampleChunks += n
			mu.Unlock()
			if sampled%(1000/sampleJobsEvery) == 0 {
				fmt.Fprintf(cfg.Progress, "  document %d indexed\n", up.doc+1)
			}
		}
	}()
	next := 0
feed:
	for {
		mu.Lock()
		perDoc := 1.0
		if sampled > 0 {
			perDoc = float64(sampleChunks) / float64(sampled)
		}
		enough := float64(next)*perDoc >= float64(cfg.Chunks)
		if gen.corpus != nil {
			enough = next == len(gen.corpus) // each document once
		}
		mu.Unlock()
		if enough {
			break
		}
		select {
		case docs <- next:
			next++
		case err := <-errc:
			close(docs)
			return err
		case <-ctx.Done():
			break feed
		}
	}
	close(docs)
	wg.Wait()
	close(uploads)
	<-done
	select {
	case err := <-errc:
		return err
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if next > 0 {
		if _, err := s.waitJob(ctx, last.jobID); err != nil {
			return err
		}
	}
	chunks, err := s.waitIndexed(ctx, next)
	if err != nil {
		return err
	}
	res.Chunks, res.Documents = chunks, next
	return nil
}

// sampleJobsEvery is how many documents ingest uploads for each job it
// follows while uploading.
const sampleJobsEvery = 50

// waitIndexed reads the owners' document lists, waits for the jobs of
// those not yet ended, and returns the chunks of all; uploaded is how many
// documents were, which the lists must hold between them.
func (s *childServer) waitIndexed(ctx context.Context, uploaded int) (int, error) {
	chunks, listed := 0, 0
	var running []string
	for _, owner := range s.owners {
		cursor := ""
		for {
			var page struct {
				Documents []struct {
					JobID  string `json:"job_id"`
					Status string `json:"status"`
					Chunks int    `json:"chunks"`
					Error  string `json:"error"`
				} `json:"documents"`
				NextCursor string `json:"next_cursor"`
			}
			q := url.Values{"owner_id": {owner}, "limit": {"1000"}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			if err := s.call(ctx, http.MethodGet, "/documents?"+q.Encode(), nil, &page); err != nil {
				return 0, fmt.Errorf("bench: scale: list documents: %w", err)
			}
			for _, d := range page.Documents {
				listed++
				switch d.Status {
				case "SUCCEEDED":
					chunks += d.Chunks
				case "FAILED":
					return 0, fmt.Errorf("bench: job %s failed: %s", d.JobID, d.Error)
				default:
					running = append(running, d.JobID)
				}
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
	}
	if listed != uploaded {
		return 0, fmt.Errorf("bench: scale: the owners list %d documents, not the %d uploaded", listed, uploaded)
	}
	for _, id := range running {
		n, err := s.waitJob(ctx, id)
		if err != nil {
			return 0, err
		}
		chunks += n
	}
	return chunks, nil
}

// waitJob polls a job until it ends and returns its chunks.
func (s *childServer) waitJob(ctx context.Context, id string) (int, error) {
	for {
		var job struct {
			Status string `json:"status"`
			Chunks int    `json:"chunks"`
			Error  string `json:"error"`
		}
		if err := s.call(ctx, http.MethodGet, "/jobs/"+id, nil, &job); err != nil {
			return 0, fmt.Errorf("bench: job %s: %w", id, err)
		}
		switch job.Status {
		case "SUCCEEDED":
			return job.Chunks, nil
		case "FAILED":
			return 0, fmt.Errorf("bench: job %s failed: %s", id, job.Error)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
