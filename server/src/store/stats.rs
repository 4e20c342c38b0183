//! What the store counts about itself, for the node's `/metrics`: objects and bytes stored,
//! metadata commit latency, data files retired and still waiting for readers, free disk space,
//! whether it takes writes and how often its metadata store was reopened.

use std::path::Path;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use crate::metrics::{AtomicHistogram, Histogram};

/// Counters kept as the store runs; objects and bytes start from a scan at open.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Objects committed (signed: a delta may land before the one it follows).
    objects: AtomicI64,
    /// Their bytes.
    object_bytes: AtomicI64,
    commits: Mutex<Histogram>,
    /// Metadata commits attempted (a group commit is one).
    commits_attempted: AtomicU64,
    /// Writes those commits held.
    commit_items: AtomicU64,
    files_retired: AtomicU64,
    files_deleted: AtomicU64,
    reopens: AtomicU64,
    /// Data bytes written with `O_DIRECT`, and with the page cache.
    direct_bytes: AtomicU64,
    cached_bytes: AtomicU64,
    /// Of the `O_DIRECT` bytes, those submitted through `io_uring`.
    ring_bytes: AtomicU64,
    /// `syncfs` calls of group commits.
    data_syncs: AtomicU64,
    /// From a write queueing its metadata commit to the commit's answer.
    pub(crate) commit_wait: AtomicHistogram,
    /// Time a write's task or thread spent off the CPU waiting for its chunks to be hashed
    /// by a batch of the MD5 lanes another thread held.
    pub(crate) md5_wait: AtomicHistogram,
}

/// A snapshot of the store's figures.
#[derive(Debug, Clone, Default)]
pub struct StoreStats {
    /// Objects stored.
    pub objects: u64,
    /// Bytes of those objects.
    pub object_bytes: u64,
    /// Metadata commits.
    pub commits: u64,
    /// Their latencies.
    pub(crate) commit_latency: Histogram,
    /// Metadata commits attempted, failed ones included (a group commit is one).
    pub commits_attempted: u64,
    /// Writes those commits held: more than `commits_attempted` when concurrent writes shared
    /// commits.
    pub commit_items: u64,
    /// Data files no committed record references any more, since the start.
    pub files_retired: u64,
    /// Of those, deleted (the rest wait for a reader to finish).
    pub files_deleted: u64,
    /// Retired files still waiting for their last reader.
    pub files_pending: u64,
    /// Space left for the store on its file system, in bytes (`None` if it cannot be read).
    pub disk_free_bytes: Option<u64>,
    /// Size of that file system, in bytes.
    pub disk_total_bytes: Option<u64>,
    /// Whether the store takes writes (see [`Writability`](super::Writability)).
    pub writable: bool,
    /// Times the metadata store was reopened after a failed commit, since the start.
    pub metadata_reopens: u64,
    /// Data bytes written to data files with `O_DIRECT` (past the page cache), since the start.
    pub direct_write_bytes: u64,
    /// Data bytes written to data files through the page cache (unaligned tails, file systems
    /// without `O_DIRECT`, `direct_io` off), since the start.
    pub cached_write_bytes: u64,
    /// Of [`direct_write_bytes`](Self::direct_write_bytes), those written through `io_uring`
    /// by the task that received them (streamed bodies' full buffers), since the start.
    pub ring_write_bytes: u64,
    /// Times a group commit made its data files durable (one `syncfs` each), since the start.
    pub data_syncs: u64,
    /// How long writes waited for their metadata commit (queued for a group, then its
    /// `syncfs` and commit).
    pub(crate) commit_wait: Histogram,
    /// How long writes waited for another thread's MD5 lane batch to hash their chunks.
    pub(crate) md5_wait: Histogram,
    /// Writes queued for the next group commit now.
    pub commit_queued: u64,
    /// The metadata store's page cache (redb's): reads and writes that found their page in
    /// it, and those that did not (`None` while the metadata store is reopening).
    pub page_cache: Option<PageCache>,
}

/// Counters of redb's page cache, since the metadata store was opened.
#[derive(Debug, Clone, Copy, Default)]
pub struct PageCache {
    /// Page reads served from the cache.
    pub read_hits: u64,
    /// Page reads that went to the file.
    pub read_misses: u64,
    /// Page writes to a page the cache held.
    pub write_hits: u64,
    /// Page writes to a page it did not.
    pub write_misses: u64,
    /// Pages evicted because the cache was full.
    pub evictions: u64,
    /// Bytes the cache holds.
    pub used_bytes: u64,
}

impl Counters {
    /// Counters starting from `objects` objects of `bytes` bytes in all.
    pub(crate) fn new(objects: u64, bytes: u64) -> Self {
        let c = Self::default();
        c.objects.store(clamp(objects), Ordering::Relaxed);
        c.object_bytes.store(clamp(bytes), Ordering::Relaxed);
        c
    }

    /// Start again from `objects` objects of `bytes` bytes (a scan after a reopen).
    pub(crate) fn reset(&self, objects: u64, bytes: u64) {
        self.objects.store(clamp(objects), Ordering::Relaxed);
        self.object_bytes.store(clamp(bytes), Ordering::Relaxed);
    }

    /// An object of `size` bytes was committed, replacing one of `replaced` bytes (if any).
    pub(crate) fn put(&self, size: u64, replaced: Option<u64>) {
        let mut objects = 1;
        let mut bytes = clamp(size);
        if let Some(old) = replaced {
            objects -= 1;
            bytes -= clamp(old);
        }
        self.objects.fetch_add(objects, Ordering::Relaxed);
        self.object_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// An object of `size` bytes was deleted.
    pub(crate) fn deleted(&self, size: u64) {
        self.objects.fetch_sub(1, Ordering::Relaxed);
        self.object_bytes.fetch_sub(clamp(size), Ordering::Relaxed);
    }

    /// A metadata commit took `elapsed`.
    pub(crate) fn commit(&self, elapsed: Duration) {
        self.commits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .observe(elapsed.as_secs_f64());
    }

    /// A metadata commit holding `items` writes was attempted.
    pub(crate) fn attempted(&self, items: usize) {
        self.commits_attempted.fetch_add(1, Ordering::Relaxed);
        self.commit_items.fetch_add(items as u64, Ordering::Relaxed);
    }

    /// `n` data bytes were written, with `O_DIRECT` or through the page cache.
    pub(crate) fn written(&self, n: usize, direct: bool) {
        let c = if direct {
            &self.direct_bytes
        } else {
            &self.cached_bytes
        };
        c.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// `n` data bytes were written with `O_DIRECT` through `io_uring`.
    pub(crate) fn ring_written(&self, n: usize) {
        self.written(n, true);
        self.ring_bytes.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// A group commit made its data files durable.
    pub(crate) fn synced(&self) {
        self.data_syncs.fetch_add(1, Ordering::Relaxed);
    }

    /// The metadata store was reopened after a failed commit.
    pub(crate) fn reopened(&self) {
        self.reopens.fetch_add(1, Ordering::Relaxed);
    }

    /// `retired` data files lost their last reference; `deleted` files were deleted.
    pub(crate) fn files(&self, retired: usize, deleted: usize) {
        self.files_retired
            .fetch_add(retired as u64, Ordering::Relaxed);
        self.files_deleted
            .fetch_add(deleted as u64, Ordering::Relaxed);
    }

    /// The figures now; `pending` retired files wait for readers, `dir` is the store's.
    pub(crate) fn snapshot(&self, pending: usize, dir: &Path) -> StoreStats {
        let (free, total) = disk_space(dir).map_or((None, None), |(f, t)| (Some(f), Some(t)));
        let commit_latency = self
            .commits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        StoreStats {
            objects: unclamp(self.objects.load(Ordering::Relaxed)),
            object_bytes: unclamp(self.object_bytes.load(Ordering::Relaxed)),
            commits: commit_latency.count(),
            commit_latency,
            commits_attempted: self.commits_attempted.load(Ordering::Relaxed),
            commit_items: self.commit_items.load(Ordering::Relaxed),
            files_retired: self.files_retired.load(Ordering::Relaxed),
            files_deleted: self.files_deleted.load(Ordering::Relaxed),
            files_pending: pending as u64,
            disk_free_bytes: free,
            disk_total_bytes: total,
            writable: true,
            metadata_reopens: self.reopens.load(Ordering::Relaxed),
            direct_write_bytes: self.direct_bytes.load(Ordering::Relaxed),
            cached_write_bytes: self.cached_bytes.load(Ordering::Relaxed),
            ring_write_bytes: self.ring_bytes.load(Ordering::Relaxed),
            data_syncs: self.data_syncs.load(Ordering::Relaxed),
            commit_wait: self.commit_wait.snapshot(),
            md5_wait: self.md5_wait.snapshot(),
            commit_queued: 0,
            page_cache: None,
        }
    }
}

fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn unclamp(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// Free space for unprivileged writers and total size of the file system holding `dir`.
pub(crate) fn disk_space(dir: &Path) -> Option<(u64, u64)> {
    let s = rustix::fs::statvfs(dir).ok()?;
    Some((
        s.f_bavail.saturating_mul(s.f_frsize),
        s.f_blocks.saturating_mul(s.f_frsize),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_and_bytes_follow_puts_and_deletes() {
        let c = Counters::new(2, 100);
        c.put(10, None);
        c.put(30, Some(10));
        c.deleted(50);
        c.files(3, 2);
        let s = c.snapshot(1, Path::new("."));
        assert_eq!((s.objects, s.object_bytes), (2, 80));
        assert_eq!(
            (s.files_retired, s.files_deleted, s.files_pending),
            (3, 2, 1)
        );
        let (free, total) = (s.disk_free_bytes.unwrap(), s.disk_total_bytes.unwrap());
        assert!(free <= total && total > 0);
    }
}
