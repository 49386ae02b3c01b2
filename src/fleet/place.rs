//! Where the tables live: a local directory, or a bucket (the event logs' object-store
//! layer: s3://, gs://, abfss://). A file is visible complete or not at all: in a directory
//! it is written under a hidden name (`.part-….parquet.tmp`, which Spark, DuckDB and
//! Trino skip) and renamed; in a bucket it is one PUT, which a store shows only once whole.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use object_store::path::Path as StoreKey;
use object_store::{ObjectStoreExt, PutPayload};

use crate::failure::Failure;
use crate::storage::remote::{self, StoreAt, StoreOptions};

/// The largest table file read back (an hour of a 10,000-executor cluster at churn 5/s is
/// about 270 KiB; anything far bigger is not one of ours). Files are read whole, then
/// decoded a batch at a time.
pub const MAX_FILE: u64 = 256 << 20;

/// A table file as listed: its key under the tables' root and its size.
#[derive(Debug, Clone)]
pub struct Listed {
    pub key: String,
    pub size: u64,
}

#[derive(Debug)]
enum Root {
    Dir(PathBuf),
    Store(StoreAt),
}

/// The tables' root.
#[derive(Debug)]
pub struct Place {
    root: Root,
    /// As it may be shown (no credentials).
    pub shown: String,
    /// A writer's listing removes a killed write's hidden file; a reader's changes nothing.
    pub clean: bool,
}

impl Place {
    /// A directory path, a `file://` URL, or an object store's URL.
    pub fn open(at: &str, opts: &StoreOptions) -> Result<Self, Failure> {
        let shown = remote::shown_location(at);
        if !remote::is_url(at) {
            return Ok(Self {
                root: Root::Dir(PathBuf::from(at)),
                shown,
                clean: false,
            });
        }
        if at.starts_with("file://") {
            return Ok(Self {
                root: Root::Dir(remote::file_path(at)?),
                shown,
                clean: false,
            });
        }
        Ok(Self {
            root: Root::Store(remote::open_store(at, opts)?),
            shown,
            clean: false,
        })
    }

    /// The directory on this machine, when it is one.
    pub fn local_dir(&self) -> Option<&Path> {
        match &self.root {
            Root::Dir(d) => Some(d),
            Root::Store(_) => None,
        }
    }

    fn store_key(at: &StoreAt, key: &str) -> StoreKey {
        if at.key.is_empty() {
            StoreKey::from(key)
        } else {
            StoreKey::from(format!("{}/{key}", at.key))
        }
    }

    fn timeout(at: &StoreAt) -> Duration {
        // The store retries twice within this itself; a hung one is cut here.
        at.timeout * 4
    }

    /// Writes `data` at `key`, whole or not at all.
    pub async fn put(&self, key: &str, data: Vec<u8>) -> Result<(), String> {
        match &self.root {
            Root::Dir(dir) => {
                let path = dir.join(key);
                tokio::task::spawn_blocking(move || put_file(&path, &data))
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| format!("{}: {e}", dir.join(key).display()))
            }
            Root::Store(at) => {
                let k = Self::store_key(at, key);
                tokio::time::timeout(Self::timeout(at), at.store.put(&k, PutPayload::from(data)))
                    .await
                    .map_err(|_| format!("{}/{key}: no answer in time", self.shown))?
                    .map(|_| ())
                    .map_err(|e| format!("{}/{key}: {}", self.shown, at.say(&e)))
            }
        }
    }

    /// The `.parquet` files under `prefix` (all of its levels), by key.
    pub async fn list(&self, prefix: &str) -> Result<Vec<Listed>, String> {
        match &self.root {
            Root::Dir(dir) => {
                let (dir, prefix, clean) = (dir.clone(), prefix.to_owned(), self.clean);
                tokio::task::spawn_blocking(move || list_dir(&dir, &prefix, clean))
                    .await
                    .map_err(|e| e.to_string())?
            }
            Root::Store(at) => {
                let k = Self::store_key(at, prefix.trim_end_matches('/'));
                let base = if at.key.is_empty() {
                    String::new()
                } else {
                    format!("{}/", at.key)
                };
                let listing = async {
                    let mut out = Vec::new();
                    let mut s = at.store.list(Some(&k));
                    while let Some(m) = s.next().await {
                        let m =
                            m.map_err(|e| format!("{}/{prefix}: {}", self.shown, at.say(&e)))?;
                        let key = m.location.as_ref();
                        let rel = key.strip_prefix(base.as_str()).unwrap_or(key);
                        if is_table_file(rel) {
                            out.push(Listed {
                                key: rel.to_owned(),
                                size: m.size,
                            });
                        }
                    }
                    Ok(out)
                };
                tokio::time::timeout(at.timeout * 10, listing)
                    .await
                    .map_err(|_| format!("{}/{prefix}: the listing took too long", self.shown))?
            }
        }
    }

    /// The names of the folders right under `prefix` (`cluster=prod-eu`, …).
    pub async fn folders(&self, prefix: &str) -> Result<Vec<String>, String> {
        match &self.root {
            Root::Dir(dir) => {
                let d = dir.join(prefix);
                let entries = match std::fs::read_dir(&d) {
                    Ok(e) => e,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                    Err(e) => return Err(format!("{}: {e}", d.display())),
                };
                let mut out: Vec<String> = entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect();
                out.sort();
                Ok(out)
            }
            Root::Store(at) => {
                let k = Self::store_key(at, prefix.trim_end_matches('/'));
                let listed =
                    tokio::time::timeout(at.timeout * 10, at.store.list_with_delimiter(Some(&k)))
                        .await
                        .map_err(|_| format!("{}/{prefix}: the listing took too long", self.shown))?
                        .map_err(|e| format!("{}/{prefix}: {}", self.shown, at.say(&e)))?;
                let mut out: Vec<String> = listed
                    .common_prefixes
                    .iter()
                    .filter_map(|p| p.as_ref().rsplit('/').next().map(str::to_owned))
                    .collect();
                out.sort();
                Ok(out)
            }
        }
    }

    /// A file's bytes (at most [`MAX_FILE`]).
    pub async fn get(&self, file: &Listed) -> Result<bytes::Bytes, String> {
        if file.size > MAX_FILE {
            return Err(format!(
                "{}/{}: {} bytes, over the {} a table file may have",
                self.shown, file.key, file.size, MAX_FILE
            ));
        }
        match &self.root {
            Root::Dir(dir) => {
                let path = dir.join(&file.key);
                tokio::task::spawn_blocking(move || {
                    use std::io::Read;
                    let mut out = Vec::new();
                    let n = std::fs::File::open(&path)
                        .and_then(|f| f.take(MAX_FILE + 1).read_to_end(&mut out))
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                    if n as u64 > MAX_FILE {
                        return Err(format!(
                            "{}: over the {MAX_FILE} bytes a table file may have",
                            path.display()
                        ));
                    }
                    Ok(bytes::Bytes::from(out))
                })
                .await
                .map_err(|e| e.to_string())?
            }
            Root::Store(at) => {
                let k = Self::store_key(at, &file.key);
                let got = async {
                    let g = at.store.get(&k).await?;
                    // The size listed may have changed since: the object's own is checked.
                    if g.meta.size > MAX_FILE {
                        return Ok(None);
                    }
                    g.bytes().await.map(Some)
                };
                tokio::time::timeout(Self::timeout(at), got)
                    .await
                    .map_err(|_| format!("{}/{}: no answer in time", self.shown, file.key))?
                    .map_err(|e| format!("{}/{}: {}", self.shown, file.key, at.say(&e)))?
                    .ok_or_else(|| {
                        format!(
                            "{}/{}: over the {MAX_FILE} bytes a table file may have",
                            self.shown, file.key
                        )
                    })
            }
        }
    }
}

/// A table's file, not a hidden one half-written.
fn is_table_file(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    name.ends_with(".parquet") && !name.starts_with('.') && !name.starts_with('_')
}

/// Writes under a hidden name, syncs, renames: a reader sees the whole file or none. The
/// hidden name is this write's own (two writers of one file never rename each other's), and
/// a write that fails removes it (a disk filled by it stayed full for the rerun).
fn put_file(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let stem = name.strip_suffix(".parquet").unwrap_or(&name);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{stem}.{}-{seq}.parquet.tmp", std::process::id()));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    // The rename itself survives a crash once the directory is synced.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The table files under `dir/prefix`; a killed write's hidden file (ten minutes old) is
/// removed on the way.
fn list_dir(dir: &Path, prefix: &str, clean: bool) -> Result<Vec<Listed>, String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.join(prefix.trim_end_matches('/'))];
    while let Some(d) = todo.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{}: {e}", d.display())),
        };
        for entry in entries {
            let entry = entry.map_err(|e| format!("{}: {e}", d.display()))?;
            let path = entry.path();
            let Ok(ft) = entry.file_type() else { continue };
            let name = entry.file_name().to_string_lossy().into_owned();
            if ft.is_dir() {
                todo.push(path);
            } else if ft.is_file() {
                if name.starts_with('.') && name.ends_with(".parquet.tmp") {
                    // Another writer's may be in flight: only one older than ten minutes.
                    let stale = entry
                        .metadata()
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age > Duration::from_secs(600));
                    if clean && stale {
                        let _ = std::fs::remove_file(&path);
                    }
                    continue;
                }
                let rel = path
                    .strip_prefix(dir)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned();
                if is_table_file(&rel) {
                    let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                    out.push(Listed { key: rel, size });
                }
            }
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_half_written_file_is_never_listed() {
        let dir = std::env::temp_dir().join(format!("st-place-{}", std::process::id()));
        let part = dir.join("t/cluster=c/date=2026-12-04");
        std::fs::create_dir_all(&part).expect("dir");
        // What a write killed before its rename leaves.
        std::fs::write(part.join(".part-1.parquet.tmp"), b"PAR1 half").expect("tmp");
        put_file(&part.join("part-2.parquet"), b"whole").expect("put");
        let listed = list_dir(&dir, "t", true).expect("list");
        assert_eq!(
            listed.iter().map(|l| l.key.as_str()).collect::<Vec<_>>(),
            ["t/cluster=c/date=2026-12-04/part-2.parquet"]
        );
        assert!(
            part.join(".part-1.parquet.tmp").exists(),
            "a recent one may be another writer's"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A write that fails leaves no hidden file behind; two writes of one file both succeed.
    #[test]
    fn a_failed_write_leaves_nothing_and_two_writers_of_one_file_both_succeed() {
        let dir = std::env::temp_dir().join(format!("st-place-fail-{}", std::process::id()));
        let part = dir.join("t/cluster=c/date=2026-12-05");
        // The target is a directory with something in it: the rename fails.
        std::fs::create_dir_all(part.join("part-3.parquet/x")).expect("dir");
        assert!(put_file(&part.join("part-3.parquet"), b"whole").is_err());
        let left: Vec<String> = std::fs::read_dir(&part)
            .expect("dir")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["part-3.parquet"], "no hidden file left");
        let target = part.join("part-4.parquet");
        std::thread::scope(|s| {
            let a = s.spawn(|| put_file(&target, b"same"));
            let b = s.spawn(|| put_file(&target, b"same"));
            assert!(a.join().expect("a").is_ok());
            assert!(b.join().expect("b").is_ok());
        });
        assert_eq!(std::fs::read(&target).expect("written"), b"same");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
