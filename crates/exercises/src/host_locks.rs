//! Where a GPU's locks live: in one folder of the host, a pair per GPU named by its UUID. Every
//! grade and every learner's check on a GPU, whoever runs it and whatever folder it writes to,
//! takes that GPU in turn through them, so that what one times never runs beside another's
//! launches.

use std::{
    fs, io,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};

use crate::{protocol::profiler_lock, supervise::lock_exclusively};

/// Names another folder for the host's GPU locks (a host without `/run/lock`, or a test's own).
pub const FOLDER_VAR: &str = "BANK_CONFLICTS_LOCKS";

/// The folder of the host's GPU locks: `$BANK_CONFLICTS_LOCKS`, else `/run/lock` (Linux's folder
/// for lock files) where every user may write to it, else `/tmp`.
pub fn folder() -> PathBuf {
    match std::env::var_os(FOLDER_VAR) {
        Some(folder) => folder.into(),
        None => first_open_to_all(&[Path::new("/run/lock"), Path::new("/tmp")]),
    }
}

/// The first of `folders` that every user may write to (on some systems `/run/lock` is root's
/// alone), else the last: chosen by the folders' modes, never by who asks, so that every user of
/// the host finds the same locks (a user's own `TMPDIR` would not do).
fn first_open_to_all(folders: &[&Path]) -> PathBuf {
    let open_to_all =
        |folder: &&&Path| fs::metadata(folder).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o002 != 0);
    folders.iter().find(open_to_all).or(folders.last()).map_or_else(PathBuf::new, |folder| folder.to_path_buf())
}

/// The lock of the GPU `uuid` (see `cuda_kernels::Gpu::uuids`) in `folder`, made with its
/// profiler's lock beside it where missing. Every user may read them, whatever this one's umask:
/// a turn is taken on a lock opened for reading ([`crate::supervise::take_turn`]).
pub fn gpu_lock(folder: &Path, uuid: &str) -> Result<PathBuf, String> {
    let lock = folder.join(format!("bank-conflicts-{uuid}.lock"));
    for file in [lock.clone(), profiler_lock(&lock)] {
        let made = match fs::OpenOptions::new().write(true).create_new(true).open(&file) {
            Ok(made) => made.set_permissions(fs::Permissions::from_mode(0o644)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            Err(error) => Err(error),
        };
        made.map_err(|error| {
            format!(
                "cannot make the GPU's lock {}: {error}; set {FOLDER_VAR} to a folder that everyone who uses \
                 this GPU may write to",
                file.display()
            )
        })?;
    }
    Ok(lock)
}

/// Whether another process holds the GPU lock `lock` or its profiler's right now (a grade, or
/// another learner's check): a check would wait for its turn.
pub fn in_use(lock: &Path) -> bool {
    // (A lock this takes goes with the file, at once.)
    [lock.to_owned(), profiler_lock(lock)]
        .iter()
        .any(|file| fs::File::open(file).is_ok_and(|file| lock_exclusively(&file, false).is_err()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervise::take_turn;

    #[test]
    fn the_locks_folder_is_the_first_every_user_may_write_to() {
        let (root_only, open) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        fs::set_permissions(root_only.path(), fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(open.path(), fs::Permissions::from_mode(0o1777)).unwrap();
        let missing = open.path().join("missing");
        assert_eq!(first_open_to_all(&[root_only.path(), open.path()]), open.path());
        assert_eq!(first_open_to_all(&[&missing, open.path(), root_only.path()]), open.path());
        assert_eq!(first_open_to_all(&[&missing, root_only.path()]), root_only.path(), "else the last");
    }

    #[test]
    fn a_gpus_locks_are_one_pair_readable_by_all_and_made_once() {
        let folder = tempfile::tempdir().unwrap();
        let uuid = "GPU-8f2a015c-9e3b-4d70-a116-02ff00c45d9b";
        let lock = gpu_lock(folder.path(), uuid).unwrap();
        assert_eq!(lock, folder.path().join(format!("bank-conflicts-{uuid}.lock")));
        for file in [&lock, &profiler_lock(&lock)] {
            assert_eq!(fs::metadata(file).unwrap().permissions().mode() & 0o777, 0o644, "{}", file.display());
        }
        // Made by another user: this one may only read it, which is enough to take a turn.
        for file in [&lock, &profiler_lock(&lock)] {
            fs::set_permissions(file, fs::Permissions::from_mode(0o444)).unwrap();
        }
        assert_eq!(gpu_lock(folder.path(), uuid).unwrap(), lock, "the same lock for every grade and check");
        assert!(!in_use(&lock), "nobody holds it");
        let turn = take_turn(&profiler_lock(&lock), &folder.path().join("turn")).unwrap();
        assert!(in_use(&lock), "a profile holds the GPU's profiler");
        drop(turn);
        let turn = take_turn(&lock, &folder.path().join("turn")).unwrap();
        assert!(in_use(&lock), "a check holds the GPU");
        drop(turn);
        assert!(!in_use(&lock));

        let error = gpu_lock(&folder.path().join("missing"), uuid).unwrap_err();
        assert!(
            error.contains("No such file")
                && error
                    .ends_with(&format!("set {FOLDER_VAR} to a folder that everyone who uses this GPU may write to")),
            "{error}"
        );
    }
}
