//! A folder of submissions: one sub-folder or `.cu` file each. Nothing outside the folder is
//! read: a path with a `..` step is refused, and so is a link that leads outside the folder
//! (`john..smith.cu` is a name like any other).

use std::{
    fs,
    io::Read,
    path::{Path, PathBuf},
};

use sha2::{Digest, Sha256};

use crate::{BadInput, learner_file::MAX_FILE_BYTES};

/// One entry of the folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    Found(Submission),
    /// Not graded, and why.
    Refused {
        name: String,
        reason: String,
    },
}

impl Entry {
    pub fn name(&self) -> &str {
        match self {
            Entry::Found(submission) => &submission.name,
            Entry::Refused { name, .. } => name,
        }
    }
}

/// A submission's file, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    /// The entry's name in the submissions folder.
    pub name: String,
    /// The file's path relative to the submissions folder, as messages show it.
    pub shown: String,
    pub bytes: Vec<u8>,
    /// SHA-256 of `bytes`, hex: with the name, what a resumed run recognises.
    pub sha256: String,
}

/// Every entry of `dir` in name order (hidden ones, `.name`, and macOS's `__MACOSX` are skipped);
/// `learner_file` is the name looked for inside a sub-folder (e.g. `exercise.cu`).
pub fn scan(dir: &Path, learner_file: &str) -> Result<Vec<Entry>, BadInput> {
    let shown = dir.display();
    let root = match fs::canonicalize(dir) {
        Ok(root) if root.is_dir() => root,
        Ok(_) => return Err(BadInput(format!("{shown} is a file: give the folder that holds the submissions"))),
        Err(_) => {
            return Err(BadInput(format!("there is no folder {shown}: give the folder that holds the submissions")));
        }
    };
    // Each name, and whether it is UTF-8: one that is not (an archive made on another system) is
    // shown with its other bytes escaped, `bad\xffname`, so that two such names stay two.
    let mut names = Vec::new();
    for entry in fs::read_dir(&root).map_err(|e| BadInput(format!("cannot read {shown}: {e}")))? {
        let entry = entry.map_err(|e| BadInput(format!("cannot read {shown}: {e}")))?;
        names.push(match entry.file_name().into_string() {
            Ok(name) => (name, true),
            Err(name) => (escaped(&name), false),
        });
    }
    names.sort();
    let entries: Vec<Entry> = names
        .into_iter()
        .filter(|(name, _)| !passed_over(name))
        .map(|(name, utf8)| match utf8 {
            false => Entry::Refused { reason: format!("refused: {}", not_utf8(&name)), name },
            true => match open(&root, &name, learner_file) {
                Ok(submission) => Entry::Found(submission),
                Err(reason) => Entry::Refused { name, reason },
            },
        })
        .collect();
    if entries.is_empty() {
        return Err(BadInput(format!(
            "{shown} has no submissions: put one sub-folder or .cu file per submission in it"
        )));
    }
    Ok(entries)
}

/// The submission `name` in `root`, or why it is refused.
fn open(root: &Path, name: &str, learner_file: &str) -> Result<Submission, String> {
    let path = inside(root, name)?;
    let (file, shown) = match path.is_dir() {
        true => {
            let shown = learner_file_in(root, name, learner_file)?;
            (inside(root, &shown)?, shown)
        }
        false if source_rank(name).is_some() => (path, name.to_owned()),
        false if is_archive(name) => {
            return Err(format!(
                "`{name}` is an archive, which the grader does not open: extract it into a folder of its own"
            ));
        }
        false => return Err(format!("not a CUDA source: a submission is a folder or a .cu file, `{name}` is neither")),
    };
    if !file.is_file() {
        return Err(format!("{shown} is not a regular file"));
    }
    let mut bytes = Vec::new();
    let mut reader = fs::File::open(&file).map_err(|e| format!("cannot read {shown}: {e}"))?;
    reader
        .by_ref()
        .take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    let sha256 = sha256_hex(&bytes);
    Ok(Submission { name: name.to_owned(), shown, bytes, sha256 })
}

/// The SHA-256 of `bytes`, in hex: how a file, or a class's names, is recognised again.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// `root/relative` resolved, if it stays inside `root` (a canonical path): the path has no `..`
/// step and any link on the way leads inside.
fn inside(root: &Path, relative: &str) -> Result<PathBuf, String> {
    if Path::new(relative).components().any(|step| step == std::path::Component::ParentDir) {
        return Err(format!("refused: the path `{relative}` steps out of its folder with `..`"));
    }
    let resolved =
        fs::canonicalize(root.join(relative)).map_err(|_| format!("refused: `{relative}` is a link to nothing"))?;
    if !resolved.starts_with(root) {
        return Err(format!(
            "refused: `{relative}` is a link to {}, outside the submissions folder",
            resolved.display()
        ));
    }
    Ok(resolved)
}

/// How a name says it is a CUDA source: 0 for `.cu` in any case (`EXERCISE.CU`), 1 for `.cu.txt`,
/// the extension an editor adds when it saves "as text" (and a system that hides extensions does
/// not show).
fn source_rank(name: &str) -> Option<u8> {
    let lower = name.to_lowercase();
    if lower.ends_with(".cu") {
        Some(0)
    } else if lower.ends_with(".cu.txt") {
        Some(1)
    } else {
        None
    }
}

/// Whether `name` is an archive a learning system hands out (a submission still zipped).
fn is_archive(name: &str) -> bool {
    let lower = name.to_lowercase();
    [".zip", ".tar", ".tar.gz", ".tgz", ".tar.xz", ".tar.bz2", ".7z", ".rar"].iter().any(|ext| lower.ends_with(ext))
}

/// What a listing of submissions, or of a submission's folder, passes over: hidden files (`.name`)
/// and the folder of metadata macOS adds to a zip (`__MACOSX`).
fn passed_over(name: &str) -> bool {
    name.starts_with('.') || name == "__MACOSX"
}

/// How deep a submission's file may lie in folders that hold nothing else (a folder zipped inside
/// the submission's own).
const NESTED_FOLDERS: usize = 3;

/// The path, relative to `root`, of the learner's file in the submission folder `folder` (relative
/// to `root`): `learner_file`, else its only source ([`source_rank`]: `.cu` before `.cu.txt`);
/// where the folder holds nothing but one folder, the file in that one.
fn learner_file_in(root: &Path, folder: &str, learner_file: &str) -> Result<String, String> {
    let mut folder = folder.to_owned();
    for _ in 0..=NESTED_FOLDERS {
        let dir = inside(root, &folder)?;
        if dir.join(learner_file).exists() {
            return Ok(format!("{folder}/{learner_file}"));
        }
        let mut files = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|e| format!("cannot read {folder}: {e}"))?.flatten() {
            match entry.file_name().into_string() {
                Ok(name) if passed_over(&name) => {}
                Ok(name) => files.push(name),
                Err(name) => return Err(not_utf8(&format!("{folder}/{}", escaped(&name)))),
            }
        }
        files.sort();
        let best = files.iter().filter_map(|f| source_rank(f)).min();
        let sources: Vec<&String> = files.iter().filter(|f| best.is_some() && source_rank(f) == best).collect();
        match (&sources[..], &files[..]) {
            ([only], _) => return Ok(format!("{folder}/{only}")),
            ([], [inner]) if dir.join(inner).is_dir() => folder = format!("{folder}/{inner}"),
            ([], []) => return Err(format!("the folder {folder} is empty: it needs the learner's {learner_file}")),
            ([], _) => {
                return Err(format!(
                    "no .cu file in {folder} (it has {}): it needs the learner's {learner_file}",
                    some_of(&files)
                ));
            }
            _ => {
                let sources: Vec<String> = sources.into_iter().cloned().collect();
                return Err(format!(
                    "{folder} has several .cu files ({}) and none named {learner_file}: name the one to grade {learner_file}",
                    some_of(&sources)
                ));
            }
        }
    }
    Err(format!(
        "{folder}: folders nested more than {NESTED_FOLDERS} deep, each holding only the next: put the learner's \
         {learner_file} in the submission's own folder"
    ))
}

/// A file name that is not UTF-8, its bytes escaped (`bad\xfename`).
fn escaped(name: &std::ffi::OsStr) -> String {
    std::os::unix::ffi::OsStrExt::as_bytes(name).escape_ascii().to_string()
}

/// Why the name `shown` (escaped) is refused.
fn not_utf8(shown: &str) -> String {
    format!("the name `{shown}` is not UTF-8 (made on a system with another encoding?): rename it")
}

/// Names in a reason: the first few, then how many more (a folder of 20 000 files made a reason of
/// 2 MB, in every report).
fn some_of(names: &[String]) -> String {
    const SHOWN: usize = 5;
    match names.len() {
        n if n <= SHOWN => names.join(", "),
        n => format!("{} and {} more", names[..SHOWN].join(", "), n - SHOWN),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn refused(entries: &[Entry], name: &str) -> String {
        match entries.iter().find(|e| e.name() == name) {
            Some(Entry::Refused { reason, .. }) => reason.clone(),
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn folders_files_and_every_refusal() {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret.cu"), "__global__ void k() {}").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, text) in [
            ("alice/exercise.cu", "a"),
            ("alice/notes.txt", "n"),
            ("bob/mine.cu", "b"),
            ("carol/a.cu", "c"),
            ("carol/b.cu", "c"),
            ("dave/report.pdf", "p"),
            ("erin.cu", "e"),
            ("frank.txt", "f"),
            (".DS_Store", "x"),
            ("..evil.cu", "x"),
            ("john..smith.cu", "j"),
        ] {
            fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            fs::write(root.join(path), text).unwrap();
        }
        fs::create_dir(root.join("empty")).unwrap();
        symlink(outside.path().join("secret.cu"), root.join("mallory.cu")).unwrap();
        fs::create_dir(root.join("oscar")).unwrap();
        symlink(outside.path().join("secret.cu"), root.join("oscar/exercise.cu")).unwrap();
        symlink(root.join("erin.cu"), root.join("peggy.cu")).unwrap();
        symlink(root.join("nowhere.cu"), root.join("trent.cu")).unwrap();

        let entries = scan(root, "exercise.cu").unwrap();
        let names: Vec<&str> = entries.iter().map(Entry::name).collect();
        assert_eq!(
            names,
            [
                "alice",
                "bob",
                "carol",
                "dave",
                "empty",
                "erin.cu",
                "frank.txt",
                "john..smith.cu",
                "mallory.cu",
                "oscar",
                "peggy.cu",
                "trent.cu"
            ]
        );
        let Entry::Found(alice) = &entries[0] else { panic!("{:?}", entries[0]) };
        assert_eq!((alice.shown.as_str(), alice.bytes.as_slice()), ("alice/exercise.cu", b"a".as_slice()));
        assert_eq!(alice.sha256, "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb");
        assert!(matches!(&entries[1], Entry::Found(s) if s.shown == "bob/mine.cu"));
        assert!(matches!(&entries[5], Entry::Found(s) if s.shown == "erin.cu"));
        assert!(matches!(&entries[7], Entry::Found(s) if s.shown == "john..smith.cu"), "`..` inside a name is a name");
        assert!(matches!(&entries[10], Entry::Found(s) if s.shown == "peggy.cu"), "a link inside is followed");
        assert!(inside(root, "alice/../../x").unwrap_err().contains("steps out of its folder"));
        assert_eq!(
            refused(&entries, "carol"),
            "carol has several .cu files (a.cu, b.cu) and none named exercise.cu: name the one to grade exercise.cu"
        );
        assert_eq!(
            refused(&entries, "dave"),
            "no .cu file in dave (it has report.pdf): it needs the learner's exercise.cu"
        );
        assert_eq!(refused(&entries, "empty"), "the folder empty is empty: it needs the learner's exercise.cu");
        assert_eq!(
            refused(&entries, "frank.txt"),
            "not a CUDA source: a submission is a folder or a .cu file, `frank.txt` is neither"
        );
        let secret = fs::canonicalize(outside.path().join("secret.cu")).unwrap();
        assert_eq!(
            refused(&entries, "mallory.cu"),
            format!("refused: `mallory.cu` is a link to {}, outside the submissions folder", secret.display())
        );
        assert_eq!(
            refused(&entries, "oscar"),
            format!("refused: `oscar/exercise.cu` is a link to {}, outside the submissions folder", secret.display())
        );
        assert_eq!(refused(&entries, "trent.cu"), "refused: `trent.cu` is a link to nothing");
    }

    #[test]
    fn what_editors_systems_and_zips_do_to_names_is_no_refusal() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for path in [
            "grace/EXERCISE.CU",
            "heidi/exercise.cu.txt",
            "heidi/notes.txt",
            "ivan/transpose-swizzle/exercise.cu",
            "ivan/.DS_Store",
            "ivan/__MACOSX/transpose-swizzle/._exercise.cu",
            "judy/one/two/three/exercise.cu",
            "ken/one/two/three/four/exercise.cu",
            "kim.CU",
            "leo.cu.txt",
            "mia/mine.cu",
            "mia/mine.cu.txt",
            "nina.ZIP",
            "__MACOSX/._kim.CU",
        ] {
            fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            fs::write(root.join(path), path).unwrap();
        }
        let entries = scan(root, "exercise.cu").unwrap();
        let shown: Vec<(&str, Option<&str>)> = entries
            .iter()
            .map(|e| match e {
                Entry::Found(s) => (e.name(), Some(s.shown.as_str())),
                Entry::Refused { .. } => (e.name(), None),
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("grace", Some("grace/EXERCISE.CU")),
                ("heidi", Some("heidi/exercise.cu.txt")),
                ("ivan", Some("ivan/transpose-swizzle/exercise.cu")),
                ("judy", Some("judy/one/two/three/exercise.cu")),
                ("ken", None),
                ("kim.CU", Some("kim.CU")),
                ("leo.cu.txt", Some("leo.cu.txt")),
                ("mia", Some("mia/mine.cu")),
                ("nina.ZIP", None),
            ],
            "__MACOSX is passed over"
        );
        assert_eq!(
            refused(&entries, "ken"),
            "ken/one/two/three/four: folders nested more than 3 deep, each holding only the next: put the learner's \
             exercise.cu in the submission's own folder"
        );
        assert_eq!(
            refused(&entries, "nina.ZIP"),
            "`nina.ZIP` is an archive, which the grader does not open: extract it into a folder of its own"
        );
    }

    #[test]
    fn names_that_are_not_utf8_stay_apart_and_are_refused_with_the_reason() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        for name in [b"bad\xffname".as_slice(), b"bad\xfename"] {
            let folder = dir.path().join(std::ffi::OsStr::from_bytes(name));
            fs::create_dir(&folder).unwrap();
            fs::write(folder.join("exercise.cu"), "x").unwrap();
        }
        let entries = scan(dir.path(), "exercise.cu").unwrap();
        let names: Vec<&str> = entries.iter().map(Entry::name).collect();
        assert_eq!(names, ["bad\\xfename", "bad\\xffname"]);
        assert!(refused(&entries, "bad\\xffname").contains("is not UTF-8"));
        // Inside a submission's folder too (a Latin-1 `café.cu`), not "a link to nothing".
        let inner = dir.path().join("lat");
        fs::create_dir(&inner).unwrap();
        fs::write(inner.join(std::ffi::OsStr::from_bytes(b"caf\xe9.cu")), "x").unwrap();
        let entries = scan(dir.path(), "exercise.cu").unwrap();
        assert_eq!(
            refused(&entries, "lat"),
            "the name `lat/caf\\xe9.cu` is not UTF-8 (made on a system with another encoding?): rename it"
        );
    }

    #[test]
    fn a_reason_names_a_few_files_and_counts_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("dave")).unwrap();
        for i in 0..8 {
            fs::write(dir.path().join(format!("dave/notes-{i}.txt")), "x").unwrap();
        }
        let entries = scan(dir.path(), "exercise.cu").unwrap();
        assert_eq!(
            refused(&entries, "dave"),
            "no .cu file in dave (it has notes-0.txt, notes-1.txt, notes-2.txt, notes-3.txt, notes-4.txt and 3 more): \
             it needs the learner's exercise.cu"
        );
    }

    #[test]
    fn a_missing_or_empty_folder_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        assert_eq!(
            scan(&missing, "exercise.cu").unwrap_err().to_string(),
            format!("there is no folder {}: give the folder that holds the submissions", missing.display())
        );
        fs::write(dir.path().join(".hidden"), "x").unwrap();
        assert_eq!(
            scan(dir.path(), "exercise.cu").unwrap_err().to_string(),
            format!("{} has no submissions: put one sub-folder or .cu file per submission in it", dir.path().display())
        );
        let file = dir.path().join(".hidden");
        assert!(
            scan(&file, "exercise.cu")
                .unwrap_err()
                .to_string()
                .ends_with("is a file: give the folder that holds the submissions")
        );
    }
}
