//! A small tmpfs mounted for one test: a disk that fills up. Tests run as root in CI; where
//! mounting is impossible the test fails and says why, it never skips.

use std::fs::File;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmpfs mounted on a fresh directory, unmounted when dropped (even when the test failed).
#[derive(Debug)]
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mount a tmpfs of `bytes`; panics with the reason if it cannot be mounted.
    pub fn mount(bytes: u64) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={bytes},mode=0700"),
                "tmpfs",
            ])
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => Self { dir },
            Ok(o) => panic!(
                "this test mounts a tmpfs (it runs as root in CI); mount failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => panic!("this test mounts a tmpfs (it runs as root in CI): mount: {e}"),
        }
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fill it with the file `name` until the disk is full; the file's path.
    pub fn fill(&self, name: &str) -> PathBuf {
        let path = self.path().join(name);
        let mut f = File::create(&path).expect("filler");
        let mut chunk = vec![0x5a_u8; 1 << 20];
        loop {
            match f.write(&chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::StorageFull => {
                    // The last pages, in smaller writes.
                    if chunk.len() == 4096 {
                        break;
                    }
                    chunk.truncate(chunk.len() / 2);
                }
                Err(e) => panic!("filling {}: {e}", path.display()),
            }
        }
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // A server stopping may hold files open for a moment.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let ok = Command::new("umount")
                .arg(self.dir.path())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            if Instant::now() >= deadline {
                // Detached now, gone once the last file closes.
                let _ = Command::new("umount")
                    .arg("-l")
                    .arg(self.dir.path())
                    .status();
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
