package bolt

import (
	"bytes"
	"time"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// The job queue is fair between projects, and between the owners of a
// project: one project's backlog of ten thousand uploads, or of scans that
// take minutes each, does not hold back another project's one document,
// nor one customer's another's. It is start-time fair queueing in two
// levels. Each project, and each owner within its project, has a tag:
// where its next job stands in a virtual time. A claim takes the project
// with the least tag, then its owner with the least tag, then that
// owner's oldest job, and moves the owner's tag and the project's one
// step on (and, when the job ends, as many more as the seconds it ran: a
// project whose documents take long gets fewer turns, not longer ones). A
// project or owner that comes back after a pause starts at the tag the
// queue has reached, not at its old one, so waiting earns no credit; alone
// in the queue, a project gets every turn.
//
// Jobs due later (a retry's back-off) wait in bucketQueue, by due time,
// and join the fair queue when they come due. Due jobs are kept in three
// buckets: each owner's jobs in arrival order, each project's owners by
// tag, and the projects by tag; an entry left without jobs (a document
// deleted meanwhile) is dropped when a claim finds it.

var (
	bucketReadyJobs     = []byte("readyjobs")     // owner \x00 8-byte sequence → job id: an owner's due jobs, oldest first
	bucketReadyOwners   = []byte("readyowners")   // project \x00 8-byte tag owner id → nil: a project's owners with due jobs
	bucketReadyProjects = []byte("readyprojects") // 8-byte tag project id → nil: the projects with due jobs
	bucketFairTags      = []byte("fairtags")      // "v": the queue's clock; "p\x00"+project, "o\x00"+owner → their tags
)

var keyFairClock = []byte("v")

// fairTags are a project's or an owner's place in the queue. next is the
// tag its next job starts at when it has none queued; entry is the tag of
// its entry in the ready buckets, 0 while it has none; clock, for a
// project, is the tag of its owner claimed last (its owners' clock).
type fairTags struct {
	next, entry, clock uint64
}

func fairKey(kind byte, id string) []byte { return append([]byte{kind, 0}, id...) }

func getFairTags(tx *bbolt.Tx, kind byte, id string) fairTags {
	v := tx.Bucket(bucketFairTags).Get(fairKey(kind, id))
	if len(v) < 24 {
		return fairTags{}
	}
	return fairTags{next: fromU64(v[:8]), entry: fromU64(v[8:16]), clock: fromU64(v[16:24])}
}

func putFairTags(tx *bbolt.Tx, kind byte, id string, t fairTags) error {
	v := append(append(u64(t.next), u64(t.entry)...), u64(t.clock)...)
	return tx.Bucket(bucketFairTags).Put(fairKey(kind, id), v)
}

func fairClock(tx *bbolt.Tx) uint64 {
	if v := tx.Bucket(bucketFairTags).Get(keyFairClock); v != nil {
		return fromU64(v)
	}
	return 0
}

func projectEntry(tag uint64, project string) []byte { return append(u64(tag), project...) }

func ownerEntry(project string, tag uint64, owner string) []byte {
	return ownerKey(project, append(u64(tag), owner...))
}

// makeReady queues j, due now, in the fair queue, giving its owner and
// project an entry at their tags when they had none.
func makeReady(tx *bbolt.Tx, j *store.Job) error {
	jobs := tx.Bucket(bucketReadyJobs)
	seq, err := jobs.NextSequence()
	if err != nil {
		return err
	}
	j.QueueKey, j.Ready = ownerKey(j.OwnerID, u64(seq)), true
	if err := jobs.Put(j.QueueKey, []byte(j.ID)); err != nil {
		return err
	}
	o := getFairTags(tx, 'o', j.OwnerID)
	if o.entry != 0 {
		return nil // its project has one too
	}
	p := getFairTags(tx, 'p', j.ProjectID)
	o.entry = max(o.next, p.clock, 1)
	if err := tx.Bucket(bucketReadyOwners).Put(ownerEntry(j.ProjectID, o.entry, j.OwnerID), nil); err != nil {
		return err
	}
	if err := putFairTags(tx, 'o', j.OwnerID, o); err != nil {
		return err
	}
	if p.entry != 0 {
		return nil
	}
	p.entry = max(p.next, fairClock(tx), 1)
	if err := tx.Bucket(bucketReadyProjects).Put(projectEntry(p.entry, j.ProjectID), nil); err != nil {
		return err
	}
	return putFairTags(tx, 'p', j.ProjectID, p)
}

// unqueue takes a PENDING job out of whichever queue holds it.
func unqueue(tx *bbolt.Tx, j *store.Job) error {
	if j.QueueKey == nil {
		return nil
	}
	b := bucketQueue
	if j.Ready {
		b = bucketReadyJobs
	}
	err := tx.Bucket(b).Delete(j.QueueKey)
	j.QueueKey, j.Ready = nil, false
	return err
}

// promoteDue moves the jobs of the waiting queue that are due at now into
// the fair queue.
func promoteDue(tx *bbolt.Tx, now time.Time) error {
	q := tx.Bucket(bucketQueue)
	for {
		k, v := q.Cursor().First()
		if k == nil || dueOf(k).After(now) {
			return nil
		}
		if err := q.Delete(k); err != nil {
			return err
		}
		j, err := getJob(tx, string(v))
		if err != nil {
			continue // gone: the claim that finds its entry would drop it
		}
		if err := makeReady(tx, j); err != nil {
			return err
		}
		if err := putJob(tx, j); err != nil {
			return err
		}
	}
}

// nextReady returns the fair queue's next job: of the project with the
// least tag not in skip, its owner with the least tag, that owner's oldest
// job, as its ready key and job id. Entries left without jobs are dropped
// on the way. It returns nil when no project outside skip has a due job.
func nextReady(tx *bbolt.Tx, skip map[string]bool) (project string, ptag uint64, owner string, otag uint64, key, id []byte, err error) {
	projects, owners, jobs := tx.Bucket(bucketReadyProjects), tx.Bucket(bucketReadyOwners), tx.Bucket(bucketReadyJobs)
	var from []byte
	for {
		pk, _ := projects.Cursor().Seek(from)
		if pk == nil {
			return "", 0, "", 0, nil, nil, nil
		}
		ptag, project = fromU64(pk[:8]), string(pk[8:])
		if skip[project] {
			from = append(bytes.Clone(pk), 0) // the next entry after it
			continue
		}
		prefix := ownerKey(project, nil)
		ok, _ := owners.Cursor().Seek(prefix)
		if ok == nil || !bytes.HasPrefix(ok, prefix) {
			// No owner left with a due job: the project leaves the queue.
			if err := leaveQueue(tx, bucketReadyProjects, bytes.Clone(pk), 'p', project, ptag); err != nil {
				return "", 0, "", 0, nil, nil, err
			}
			continue
		}
		otag, owner = fromU64(ok[len(prefix):len(prefix)+8]), string(ok[len(prefix)+8:])
		jprefix := ownerKey(owner, nil)
		jk, jv := jobs.Cursor().Seek(jprefix)
		if jk == nil || !bytes.HasPrefix(jk, jprefix) {
			if err := leaveQueue(tx, bucketReadyOwners, bytes.Clone(ok), 'o', owner, otag); err != nil {
				return "", 0, "", 0, nil, nil, err
			}
			continue
		}
		return project, ptag, owner, otag, bytes.Clone(jk), bytes.Clone(jv), nil
	}
}

// leaveQueue drops the ready entry key of a project or owner (kind 'p' or
// 'o') whose tag was tag, keeping the tag as where it starts next time.
func leaveQueue(tx *bbolt.Tx, bucket, key []byte, kind byte, id string, tag uint64) error {
	if err := tx.Bucket(bucket).Delete(key); err != nil {
		return err
	}
	t := getFairTags(tx, kind, id)
	t.entry, t.next = 0, max(t.next, tag)
	return putFairTags(tx, kind, id, t)
}

// tookTurn moves a project and the owner whose job was claimed one step
// on: their entries go to their next tags, or out of the queue when they
// have no due job left, and the queue's clock moves to the project's tag.
func tookTurn(tx *bbolt.Tx, project string, ptag uint64, owner string, otag uint64) error {
	owners, projects := tx.Bucket(bucketReadyOwners), tx.Bucket(bucketReadyProjects)
	o := getFairTags(tx, 'o', owner)
	if err := owners.Delete(ownerEntry(project, otag, owner)); err != nil {
		return err
	}
	o.next, o.entry = otag+1, 0
	jprefix := ownerKey(owner, nil)
	if k, _ := tx.Bucket(bucketReadyJobs).Cursor().Seek(jprefix); k != nil && bytes.HasPrefix(k, jprefix) {
		o.entry = o.next
		if err := owners.Put(ownerEntry(project, o.entry, owner), nil); err != nil {
			return err
		}
	}
	if err := putFairTags(tx, 'o', owner, o); err != nil {
		return err
	}
	p := getFairTags(tx, 'p', project)
	if err := projects.Delete(projectEntry(ptag, project)); err != nil {
		return err
	}
	p.next, p.entry, p.clock = ptag+1, 0, otag
	prefix := ownerKey(project, nil)
	if k, _ := owners.Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
		p.entry = p.next
		if err := projects.Put(projectEntry(p.entry, project), nil); err != nil {
			return err
		}
	}
	if err := putFairTags(tx, 'p', project, p); err != nil {
		return err
	}
	return tx.Bucket(bucketFairTags).Put(keyFairClock, u64(max(fairClock(tx), ptag)))
}

// chargeRun moves the tags of a job's project and owner on by the time
// its run took beyond its one turn, once the run is over.
func chargeRun(tx *bbolt.Tx, j *store.Job, now time.Time) error {
	if j.StartedAt.IsZero() {
		return nil
	}
	steps := uint64(max(0, now.Sub(j.StartedAt)) / store.CostUnit)
	if steps == 0 {
		return nil
	}
	for _, c := range []struct {
		kind   byte
		id     string
		bucket []byte
		entry  func(tag uint64) []byte
	}{
		{'o', j.OwnerID, bucketReadyOwners, func(tag uint64) []byte { return ownerEntry(j.ProjectID, tag, j.OwnerID) }},
		{'p', j.ProjectID, bucketReadyProjects, func(tag uint64) []byte { return projectEntry(tag, j.ProjectID) }},
	} {
		t := getFairTags(tx, c.kind, c.id)
		if t.entry == 0 {
			t.next += steps
		} else {
			b := tx.Bucket(c.bucket)
			if err := b.Delete(c.entry(t.entry)); err != nil {
				return err
			}
			t.entry += steps
			if err := b.Put(c.entry(t.entry), nil); err != nil {
				return err
			}
		}
		if err := putFairTags(tx, c.kind, c.id, t); err != nil {
			return err
		}
	}
	return nil
}
