//! What the node adds to the front's admin side: its store's figures on `/metrics`, and
//! readiness (the metadata store answers and the store takes writes).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::metrics::{counter, family, gauge, ratio};
use crate::store::{Store, Writability};

/// `/readyz` (and the S3 listener's `/healthz`): ready while the metadata store answers and
/// the store takes writes (not while the disk is full or the metadata store is reopening).
pub(crate) fn readiness(store: &Store) -> (bool, String) {
    let dir = store.dir().display();
    if !store.is_readable() {
        return (false, format!("store {dir} unreadable\n"));
    }
    match store.writability() {
        Writability::Writable => (true, format!("store {dir} ok\n")),
        w => (false, format!("store {dir} cannot write: {w}\n")),
    }
}

/// The store's metrics, named `<prefix>_store_...`.
pub(crate) fn render(store: &Store, o: &mut String, prefix: &str) {
    let s = store.stats();
    gauge(
        o,
        &format!("{prefix}_store_objects"),
        "Objects stored.",
        s.objects,
    );
    gauge(
        o,
        &format!("{prefix}_store_object_bytes"),
        "Bytes of the objects stored.",
        s.object_bytes,
    );
    let commits = format!("{prefix}_store_commit_duration_seconds");
    family(
        o,
        &commits,
        "histogram",
        "Metadata commit latency (fsync included).",
    );
    s.commit_latency.render(o, &commits, "");
    counter(
        o,
        &format!("{prefix}_store_commits_total"),
        "Metadata commits attempted (concurrent writes share one: a group commit).",
        s.commits_attempted,
    );
    counter(
        o,
        &format!("{prefix}_store_commit_batch_items_total"),
        "Writes those commits held (divided by the commits: the mean group size).",
        s.commit_items,
    );
    let name = format!("{prefix}_store_commit_wait_seconds");
    family(
        o,
        &name,
        "histogram",
        "Time writes waited for their metadata commit: queued for the next group, then its syncfs and commit.",
    );
    s.commit_wait.render(o, &name, "");
    gauge(
        o,
        &format!("{prefix}_store_commit_queued"),
        "Writes queued for the next group commit now.",
        s.commit_queued,
    );
    if let Some(c) = s.page_cache {
        for (suffix, help, v) in [
            (
                "read_hits",
                "Metadata page reads served by redb's page cache.",
                c.read_hits,
            ),
            (
                "read_misses",
                "Metadata page reads that went to the file.",
                c.read_misses,
            ),
            (
                "write_hits",
                "Metadata page writes to a page the cache held.",
                c.write_hits,
            ),
            (
                "write_misses",
                "Metadata page writes to a page the cache did not hold.",
                c.write_misses,
            ),
            (
                "evictions",
                "Metadata pages evicted from the full page cache.",
                c.evictions,
            ),
        ] {
            counter(
                o,
                &format!("{prefix}_store_page_cache_{suffix}_total"),
                &format!("{help} (since the metadata store was opened)"),
                v,
            );
        }
        gauge(
            o,
            &format!("{prefix}_store_page_cache_hit_ratio"),
            "Share of metadata page reads served by redb's page cache.",
            ratio(c.read_hits, c.read_hits + c.read_misses),
        );
        gauge(
            o,
            &format!("{prefix}_store_page_cache_bytes"),
            "Bytes redb's page cache holds.",
            c.used_bytes,
        );
    }
    counter(
        o,
        &format!("{prefix}_store_direct_write_bytes_total"),
        "Data bytes written to data files with O_DIRECT, past the page cache.",
        s.direct_write_bytes,
    );
    counter(
        o,
        &format!("{prefix}_store_cached_write_bytes_total"),
        "Data bytes written to data files through the page cache (unaligned tails, no O_DIRECT).",
        s.cached_write_bytes,
    );
    counter(
        o,
        &format!("{prefix}_store_ring_write_bytes_total"),
        "Of the O_DIRECT bytes, those submitted through io_uring by the task that received them.",
        s.ring_write_bytes,
    );
    counter(
        o,
        &format!("{prefix}_store_data_syncs_total"),
        "Group commits' syncfs calls, each making the data files of its group durable.",
        s.data_syncs,
    );
    counter(
        o,
        &format!("{prefix}_store_files_retired_total"),
        "Data files no committed record references any more.",
        s.files_retired,
    );
    counter(
        o,
        &format!("{prefix}_store_files_deleted_total"),
        "Retired data files deleted.",
        s.files_deleted,
    );
    gauge(
        o,
        &format!("{prefix}_store_files_pending_cleanup"),
        "Retired data files still open by a reader, deleted when it finishes.",
        s.files_pending,
    );
    gauge(
        o,
        &format!("{prefix}_store_writable"),
        "1 while the store takes writes; 0 while its disk is full or its metadata store reopens.",
        u64::from(s.writable),
    );
    counter(
        o,
        &format!("{prefix}_store_metadata_reopens_total"),
        "Times the metadata store was reopened after a commit failed (a full disk).",
        s.metadata_reopens,
    );
    let l = store.md5_lanes();
    counter(
        o,
        &format!("{prefix}_md5_lane_batches_total"),
        "Batches the MD5 lane scheduler hashed (ETags and Content-MD5 of PUTs, parts, copies).",
        l.batches,
    );
    counter(
        o,
        &format!("{prefix}_md5_lane_streams_total"),
        "Writes in those batches, summed: above the batches when writes shared SIMD lanes.",
        l.streams,
    );
    counter(
        o,
        &format!("{prefix}_md5_lane_shared_batches_total"),
        "Batches that hashed more than one write side by side.",
        l.shared_batches,
    );
    gauge(
        o,
        &format!("{prefix}_md5_lane_widest_batch"),
        "The most writes one batch hashed together.",
        l.widest,
    );
    counter(
        o,
        &format!("{prefix}_md5_lane_bytes_total"),
        "Bytes the MD5 lane scheduler hashed.",
        l.bytes,
    );
    let width = store.md5_lane_width();
    gauge(
        o,
        &format!("{prefix}_md5_lane_width"),
        "Writes one batch can hash side by side (16 with AVX-512, 8 with AVX2, 1 without SIMD).",
        width,
    );
    gauge(
        o,
        &format!("{prefix}_md5_lane_fill_ratio"),
        "Mean batch fill: writes per batch over the lane width (1: every lane used).",
        ratio(l.streams, l.batches.saturating_mul(width as u64)),
    );
    gauge(
        o,
        &format!("{prefix}_md5_lane_queued_chunks"),
        "Buffers queued in the MD5 lanes now, waiting for a batch.",
        store.md5_lane_queued(),
    );
    let name = format!("{prefix}_md5_lane_wait_seconds");
    family(
        o,
        &name,
        "histogram",
        "Time writes waited off the CPU for another thread's MD5 lane batch to hash their chunks.",
    );
    s.md5_wait.render(o, &name, "");
    if let (Some(free), Some(total)) = (s.disk_free_bytes, s.disk_total_bytes) {
        gauge(
            o,
            &format!("{prefix}_store_disk_free_bytes"),
            "Space left on the store's file system.",
            free,
        );
        gauge(
            o,
            &format!("{prefix}_store_disk_total_bytes"),
            "Size of the store's file system.",
            total,
        );
    }
}

/// How the node's reads went out, named `<prefix>_sendfile_bytes_total` and
/// `<prefix>_cached_read_bytes_total`.
pub(crate) fn render_reads(
    sendfile_bytes: &AtomicU64,
    cached_read_bytes: &AtomicU64,
    o: &mut String,
    prefix: &str,
) {
    counter(
        o,
        &format!("{prefix}_sendfile_bytes_total"),
        "GET body bytes the kernel sent from data files with sendfile(2) (plain TCP, Linux).",
        sendfile_bytes.load(Ordering::Relaxed),
    );
    counter(
        o,
        &format!("{prefix}_cached_read_bytes_total"),
        "GET body bytes read (and decrypted) from the page cache on a runtime thread, without a \
         hand-off to the blocking pool (copied bodies: TLS, encrypted objects, --no-sendfile).",
        cached_read_bytes.load(Ordering::Relaxed),
    );
}
