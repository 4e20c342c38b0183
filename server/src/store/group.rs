//! Group commit: concurrent commits share one metadata write transaction and its fsync.
//!
//! A committer queues its work (a closure over the write transaction, and the data file the
//! record references) and waits. The first committer that finds no commit running leads: it
//! takes everything queued, runs each item in one transaction, commits once and hands every
//! waiter its own result; whoever queued meanwhile forms the next group. An item that refuses
//! (a fenced or missing bucket, a failed precondition) fails alone: redb has no savepoint inside
//! a dirty transaction, so the transaction is aborted and the others run again without it (an
//! item is a pure function of the transaction's state, so running it again is safe). A commit
//! that fails fails every item of its group, as one item's failed commit would.
//!
//! Every item's data file is complete and renamed before the item is queued; the leader makes
//! the group's files durable with one `syncfs` before the transaction commits (see
//! [`super::files::sync_data_files`]), so a commit never references a file that is not
//! durable, and a failed `syncfs` fails the group before anything is committed. An item is
//! acknowledged only after the commit that holds it returned.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use redb::{Durability, WriteTransaction};

use super::Store;
use super::files::Staged;

/// What an item yields, boxed so one group holds items of any result type.
type Output = Box<dyn Any + Send>;
/// An item's work in the shared transaction: refuse with an `Err` (it may have written
/// already: the transaction is then aborted and run again without it).
type Apply = Box<dyn FnMut(&WriteTransaction) -> S3Result<Output> + Send>;

/// One queued commit.
struct Item {
    id: u64,
    apply: Apply,
    /// The data file the record references: deleted if the item is refused, kept once its
    /// commit is attempted.
    staged: Option<Staged>,
}

#[derive(Default)]
struct Queue {
    next_id: u64,
    waiting: Vec<Item>,
    /// A leader is running a group.
    leading: bool,
    /// Results of finished items, by id, until their waiter takes them.
    done: HashMap<u64, S3Result<Output>>,
}

/// The commits waiting for the next group.
#[derive(Default)]
pub(crate) struct Committer {
    queue: Mutex<Queue>,
    wake: Condvar,
}

impl Committer {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes queued for the next group now.
    pub(crate) fn queued(&self) -> usize {
        self.lock().waiting.len()
    }
}

/// Hands a group's results to its waiters and lets the next leader in; if the leader panicked
/// (no results), fails the group's items so that their waiters do not wait forever.
struct LeaderGuard<'a> {
    committer: &'a Committer,
    ids: Vec<u64>,
    results: Vec<(u64, S3Result<Output>)>,
}

impl Drop for LeaderGuard<'_> {
    fn drop(&mut self) {
        let mut q = self.committer.lock();
        q.done.extend(self.results.drain(..));
        for id in self.ids.drain(..) {
            q.done.entry(id).or_insert_with(|| {
                Err(S3Error::with_message(
                    S3ErrorCode::InternalError,
                    "the group commit holding this write failed",
                ))
            });
        }
        q.leading = false;
        drop(q);
        self.committer.wake.notify_all();
    }
}

impl Store {
    /// Run `f` in a write transaction shared with concurrent committers and commit it; returns
    /// once the commit holding it returned.
    ///
    /// As [`Store::update`]: `staged` is deleted if `f` refuses, kept once the commit is
    /// attempted. `f` may run more than once (against the same state) if another item of its
    /// group refuses, so it must only read and write the transaction.
    pub(crate) fn update_grouped<T: Send + 'static>(
        &self,
        staged: Option<Staged>,
        mut f: impl FnMut(&WriteTransaction) -> S3Result<T> + Send + 'static,
    ) -> S3Result<T> {
        let apply: Apply = Box::new(move |txn| f(txn).map(|t| Box::new(t) as Output));
        let committer = &self.inner.committer;
        let queued = Instant::now();
        let mut q = committer.lock();
        let id = q.next_id;
        q.next_id += 1;
        q.waiting.push(Item { id, apply, staged });
        loop {
            if let Some(out) = q.done.remove(&id) {
                drop(q);
                self.inner.counters.commit_wait.observe(queued.elapsed());
                return out.and_then(|b| {
                    b.downcast::<T>().map(|t| *t).map_err(|_| {
                        S3Error::with_message(S3ErrorCode::InternalError, "group commit result")
                    })
                });
            }
            if !q.leading {
                // Our item is still queued (not done, and no group runs): lead the next group.
                q.leading = true;
                let group = std::mem::take(&mut q.waiting);
                drop(q);
                let mut guard = LeaderGuard {
                    committer,
                    ids: group.iter().map(|i| i.id).collect(),
                    results: Vec::new(),
                };
                guard.results = self.commit_group(group);
                drop(guard);
                q = committer.lock();
                continue;
            }
            q = committer
                .wake
                .wait(q)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Run `group` in one transaction (again without the items that refuse) and commit it once.
    fn commit_group(&self, mut group: Vec<Item>) -> Vec<(u64, S3Result<Output>)> {
        let mut results = Vec::with_capacity(group.len());
        let fail_all = |group: Vec<Item>, e: S3Error, results: &mut Vec<_>| {
            results.extend(group.into_iter().map(|i| (i.id, Err(e.clone()))));
        };
        if self.inner.config.fsync
            && group.iter().any(|i| i.staged.is_some())
            && let Err(e) = super::files::sync_data_files(&self.inner)
        {
            fail_all(group, self.inner.io_failed(e), &mut results);
            return results;
        }
        let db = match self.write_db() {
            Ok(db) => db,
            Err(e) => {
                fail_all(group, e, &mut results);
                return results;
            }
        };
        while !group.is_empty() {
            let mut txn = match db.begin_write() {
                Ok(txn) => txn,
                Err(e) => {
                    let e = self.meta_failed(e.into());
                    fail_all(group, e, &mut results);
                    break;
                }
            };
            if !self.inner.config.fsync
                && let Err(e) = txn.set_durability(Durability::None)
            {
                fail_all(group, super::db_err(e), &mut results);
                break;
            }
            let outs: Vec<S3Result<Output>> =
                group.iter_mut().map(|item| (item.apply)(&txn)).collect();
            if outs.iter().any(Result::is_err) {
                // Some refused: they fail alone (dropping their files), the rest run again.
                let _ = txn.abort();
                let mut rest = Vec::with_capacity(group.len());
                for (item, out) in group.into_iter().zip(outs) {
                    match out {
                        Err(e) => results.push((item.id, Err(e))),
                        Ok(_) => rest.push(item),
                    }
                }
                group = rest;
                continue;
            }
            let kept: Vec<_> = group
                .iter_mut()
                .filter_map(|i| i.staged.take().map(Staged::keep))
                .collect();
            let started = Instant::now();
            let committed = txn.commit();
            self.inner.counters.attempted(group.len());
            match committed {
                Ok(()) => {
                    self.inner.counters.commit(started.elapsed());
                    results.extend(group.into_iter().map(|i| i.id).zip(outs));
                }
                Err(e) => {
                    for id in kept {
                        self.inner.meta.commit_unknown(id);
                    }
                    let e = self.meta_failed(e.into());
                    fail_all(group, e, &mut results);
                }
            }
            break;
        }
        results
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::time::Duration;

    use ferry_core::md5::{ETag, md5};

    use super::*;
    use crate::store::{
        CompleteOptions, DeleteOptions, GetOptions, HeadOptions, ObjectMeta, PartOf, StoreConfig,
        WriteConditions,
    };

    /// Hold the committer as if a group were running, so that commits queue behind it.
    fn hold(store: &Store) {
        store.inner.committer.lock().leading = true;
    }

    /// Once `n` commits are queued, let them go: the first to wake leads them all. (Fails
    /// the test if they are not queued within 20 s: a hang guard.)
    fn release_when_queued(store: &Store, n: usize) {
        let c = &store.inner.committer;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let queued = c.lock().waiting.len();
            if queued >= n {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{queued} commits queued within 20 s, not {n}"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        c.lock().leading = false;
        c.wake.notify_all();
    }

    fn data_files(dir: &std::path::Path) -> usize {
        let mut n = 0;
        for fan in std::fs::read_dir(dir.join("data")).unwrap() {
            n += std::fs::read_dir(fan.unwrap().path()).unwrap().count();
        }
        n
    }

    fn body(i: usize) -> Vec<u8> {
        (0..10_000 + i * 777).map(|j| (j * 31 + i) as u8).collect()
    }

    #[test]
    fn concurrent_puts_share_one_commit_and_each_gets_its_own_result() {
        for fsync in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let config = StoreConfig {
                fsync,
                ..StoreConfig::default()
            };
            let s = Store::open_with(dir.path(), config).unwrap();
            for b in ["b", "fenced", "gone"] {
                s.create_bucket(b).unwrap();
            }
            let mut ok = Vec::new();
            for i in 0..8 {
                let mut w = s.object_writer("b", &format!("k{i}"), None).unwrap();
                w.write(&body(i)).unwrap();
                ok.push(w);
            }
            // Writers that started while their bucket took writes, refused at commit.
            let mut fenced = s.object_writer("fenced", "k", None).unwrap();
            fenced.write(b"no").unwrap();
            let mut gone = s.object_writer("gone", "k", None).unwrap();
            gone.write(b"no").unwrap();
            s.fence_bucket("fenced", "t", Duration::from_secs(60))
                .unwrap();
            s.delete_bucket("gone").unwrap();
            let before = s.stats();

            hold(&s);
            let (oks, refused) = std::thread::scope(|scope| {
                let oks: Vec<_> = ok
                    .into_iter()
                    .map(|w| {
                        scope.spawn(|| w.commit(ObjectMeta::default(), WriteConditions::default()))
                    })
                    .collect();
                let refused: Vec<_> = [fenced, gone]
                    .into_iter()
                    .map(|w| {
                        scope.spawn(|| w.commit(ObjectMeta::default(), WriteConditions::default()))
                    })
                    .collect();
                release_when_queued(&s, 10);
                let join = |h: std::thread::ScopedJoinHandle<'_, _>| h.join().unwrap();
                (
                    oks.into_iter().map(join).collect::<Vec<_>>(),
                    refused.into_iter().map(join).collect::<Vec<_>>(),
                )
            });

            for (i, r) in oks.iter().enumerate() {
                let r = r.as_ref().unwrap();
                assert_eq!(r.etag, ETag::single(&md5(&body(i))), "fsync {fsync}");
            }
            let codes: Vec<_> = refused
                .iter()
                .map(|r| r.as_ref().unwrap_err().code)
                .collect();
            assert_eq!(
                codes,
                [S3ErrorCode::OperationAborted, S3ErrorCode::NoSuchBucket]
            );
            // Ten writes, one transaction committed (the refused ones ran, then were left out),
            // their ten files made durable by one syncfs before it (none without fsync).
            let after = s.stats();
            assert_eq!(after.commits_attempted - before.commits_attempted, 1);
            assert_eq!(after.commit_items - before.commit_items, 8);
            assert_eq!(after.data_syncs - before.data_syncs, u64::from(fsync));
            assert_eq!(after.objects, 8);
            // The refused writes' files are gone.
            assert_eq!(data_files(dir.path()), 8);

            drop(s);
            let s = Store::open_with(dir.path(), config).unwrap();
            assert_eq!(s.cleanup_report(), Default::default());
            for i in 0..8 {
                let mut r = s
                    .get_object("b", &format!("k{i}"), GetOptions::default())
                    .unwrap();
                let mut got = Vec::new();
                r.read_to_end(&mut got).unwrap();
                assert_eq!(got, body(i));
            }
        }
    }

    #[test]
    fn only_groups_with_new_data_files_sync_the_file_system() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        s.create_bucket("b").unwrap();
        let syncs = || s.stats().data_syncs;
        assert_eq!(syncs(), 0);
        let mut w = s.object_writer("b", "k", None).unwrap();
        w.write(b"x").unwrap();
        w.commit(ObjectMeta::default(), WriteConditions::default())
            .unwrap();
        assert_eq!(syncs(), 1);
        // A part's commit brings a new file; the completion only references it.
        let up = s
            .create_multipart_upload("b", "mp", ObjectMeta::default(), None)
            .unwrap();
        let mut p = s
            .part_writer(
                "b",
                "mp",
                PartOf {
                    upload_id: &up,
                    part_number: 1,
                    customer: None,
                },
            )
            .unwrap();
        p.write(b"part").unwrap();
        p.commit().unwrap();
        assert_eq!(syncs(), 2);
        let etag = s.list_parts("b", "mp", &up, 0, 10).unwrap().parts[0].etag;
        let part = crate::store::CompletedPart {
            part_number: 1,
            etag,
            checksums: Vec::new(),
        };
        s.complete_multipart_upload("b", "mp", &up, &[part], CompleteOptions::default())
            .map(|r| r.put)
            .unwrap();
        s.delete_object("b", "k", DeleteOptions::default()).unwrap();
        assert_eq!(syncs(), 2);
    }

    #[test]
    fn an_item_depending_on_a_refused_one_is_judged_again() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open_with(
            dir.path(),
            StoreConfig {
                fsync: false,
                ..StoreConfig::default()
            },
        )
        .unwrap();
        s.create_bucket("b").unwrap();
        s.create_bucket("fenced").unwrap();
        let mut fenced = s.object_writer("fenced", "k", None).unwrap();
        fenced.write(b"no").unwrap();
        s.fence_bucket("fenced", "t", Duration::from_secs(60))
            .unwrap();
        // Two writes of one key with If-None-Match: *, queued together: the first wins.
        let star = WriteConditions {
            if_none_match_star: true,
            ..WriteConditions::default()
        };
        let writers: Vec<_> = (0..2)
            .map(|i| {
                let mut w = s.object_writer("b", "k", None).unwrap();
                w.write(&body(i)).unwrap();
                w
            })
            .collect();
        hold(&s);
        let results = std::thread::scope(|scope| {
            let mut hs = vec![
                scope.spawn(|| fenced.commit(ObjectMeta::default(), WriteConditions::default())),
            ];
            hs.extend(
                writers
                    .into_iter()
                    .map(|w| scope.spawn(move || w.commit(ObjectMeta::default(), star))),
            );
            release_when_queued(&s, 3);
            hs.into_iter()
                .map(|h| h.join().unwrap().map(|r| r.etag))
                .collect::<Vec<_>>()
        });
        let failed: Vec<_> = results
            .iter()
            .filter_map(|r| r.as_ref().err().map(|e| e.code))
            .collect();
        let mut failed = failed;
        failed.sort_by_key(|c| format!("{c:?}"));
        assert_eq!(
            failed,
            [
                S3ErrorCode::OperationAborted,
                S3ErrorCode::PreconditionFailed
            ]
        );
        let winner = results.iter().find_map(|r| r.clone().ok()).unwrap();
        assert_eq!(
            s.head_object("b", "k", HeadOptions::default())
                .unwrap()
                .etag,
            winner
        );
        assert_eq!(data_files(dir.path()), 1);
    }

    #[test]
    fn a_released_reader_leaves_what_it_pinned_for_a_blocking_thread() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open_with(dir.path(), StoreConfig::default()).unwrap();
        s.create_bucket("b").unwrap();
        let put = |data: &[u8]| {
            let mut w = s.object_writer("b", "k", None).unwrap();
            w.write(data).unwrap();
            w.commit(ObjectMeta::default(), WriteConditions::default())
                .unwrap();
        };
        put(&body(1));
        // Nothing retired while it read: released with nothing to delete.
        let reader = s.get_object("b", "k", GetOptions::default()).unwrap();
        assert!(reader.release().is_none());
        assert_eq!(data_files(dir.path()), 1);
        // Overwritten while it read: its file is retired, kept until the reader lets go, and
        // deleted only by `remove`.
        let reader = s.get_object("b", "k", GetOptions::default()).unwrap();
        put(&body(2));
        assert_eq!(data_files(dir.path()), 2);
        let unpinned = reader
            .release()
            .expect("the old version's file is left to delete");
        assert_eq!(s.stats().files_pending, 0);
        assert_eq!(data_files(dir.path()), 2);
        unpinned.remove();
        assert_eq!(data_files(dir.path()), 1);
        let mut got = Vec::new();
        s.get_object("b", "k", GetOptions::default())
            .unwrap()
            .read_to_end(&mut got)
            .unwrap();
        assert_eq!(got, body(2));
    }
}
