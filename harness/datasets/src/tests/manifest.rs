//! Manifests and `fetch` over a local git repository (a loopback remote: no network), and a manifest built
//! from the real corpus in `../shared`.

use crate::manifest::{self, Manifest, ManifestError, ManifestFile};
use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A repository whose branch `sessions/v1` holds one session at `ab/cd/0/full.jsonl`; returns its commit.
fn upstream(dir: &Path, body: &[u8]) -> String {
    git(dir, &["init", "-q"]);
    git(dir, &["checkout", "-q", "-b", "sessions/v1"]);
    std::fs::create_dir_all(dir.join("ab/cd/0")).unwrap();
    std::fs::write(dir.join("ab/cd/0/full.jsonl"), body).unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "a session"]);
    let out = Command::new("git").arg("-C").arg(dir).args(["rev-parse", "HEAD"]).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn manifest_for(repo: &Path, commit: &str, sha256: String) -> Manifest {
    Manifest {
        corpus: "test".into(),
        repository: Some(repo.display().to_string()),
        git_ref: Some("sessions/v1".into()),
        license: None,
        files: vec![ManifestFile {
            name: "s1.jsonl".into(),
            repository: None,
            // Abbreviated, as SOURCE.md tables write commits: resolved in the fetched branch.
            commit: commit[..12].to_string(),
            path: "ab/cd/0/full.jsonl".into(),
            sha256,
        }],
    }
}

#[test]
fn fetch_writes_checked_files_and_refuses_a_checksum_mismatch() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("upstream");
    std::fs::create_dir_all(&repo).unwrap();
    let body = b"{\"type\":\"user\",\"uuid\":\"1\"}\n";
    let commit = upstream(&repo, body);
    let into = tmp.path().join("sessions");

    let good = manifest_for(&repo, &commit, manifest::sha256_hex(body));
    let r = manifest::fetch(&good, &into).unwrap();
    assert_eq!(r.fetched, ["s1.jsonl"]);
    assert_eq!(std::fs::read(into.join("s1.jsonl")).unwrap(), body);
    // Again: present and checked, not fetched.
    let r = manifest::fetch(&good, &into).unwrap();
    assert_eq!((r.fetched.len(), r.present.as_slice()), (0, ["s1.jsonl".to_string()].as_slice()));

    // A manifest whose checksum does not match: refused, and nothing is written.
    let other = tmp.path().join("other");
    let bad = manifest_for(&repo, &commit, "0".repeat(64));
    let e = manifest::fetch(&bad, &other).unwrap_err();
    assert!(matches!(e, ManifestError::Checksum { .. }), "{e}");
    assert!(e.to_string().contains("s1.jsonl") && e.to_string().contains("refused"), "{e}");
    assert!(!other.join("s1.jsonl").exists());

    // A path not in the commit names git's complaint.
    let mut missing = good.clone();
    missing.files[0].path = "no/such/file.jsonl".into();
    let e = manifest::fetch(&missing, &tmp.path().join("third")).unwrap_err();
    assert!(matches!(e, ManifestError::Git { .. }), "{e}");
}

#[test]
fn a_manifest_names_the_file_and_field_it_cannot_use() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("m.toml");
    std::fs::write(
        &path,
        "corpus = \"x\"\nrepository = \"o/r\"\n[[file]]\nname = \"a.jsonl\"\ncommit = \"abc\"\npath = \"p\"\nsha256 = \"12\"\n",
    )
    .unwrap();
    let e = Manifest::load(&path).unwrap_err().to_string();
    assert!(e.contains("m.toml") && e.contains("a.jsonl") && e.contains("sha256"), "{e}");
    std::fs::write(&path, "corpus = \"x\"\n[[file]]\nname = \"a.jsonl\"\n").unwrap();
    let e = Manifest::load(&path).unwrap_err().to_string();
    assert!(e.contains("m.toml") && e.contains("commit"), "{e}");
    assert_eq!(manifest::repository_url("entireio/cli"), "https://github.com/entireio/cli.git");
    assert_eq!(manifest::repository_url("/tmp/r"), "/tmp/r");
}

/// The committed manifests describe the shared corpora exactly: every file, its upstream path and the
/// sha256 of its uncompressed bytes (so a fetch from upstream yields the very sessions the reports used).
#[test]
fn committed_manifests_match_the_shared_corpora() {
    let repo_root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for (manifest_file, dir, repository, git_ref, commit) in [
        (
            "claude-code-long.toml",
            "claude-code-long",
            Some("entireio/cli"),
            Some("entire/checkpoints/v1"),
            Some("394f81fab87f71aa8938d91ff7a067c524ff344b"),
        ),
        ("agent-sessions-claude-code.toml", "agent-sessions/claude-code", None, Some("entire/checkpoints/v1"), None),
        ("agent-sessions-codex.toml", "agent-sessions/codex", None, Some("entire/checkpoints/v1"), None),
    ] {
        let committed = Manifest::load(&repo_root.join("datasets/manifests").join(manifest_file)).unwrap();
        let root = super::real_sessions::shared_dir().join("datasets-raw").join(dir);
        let built = Manifest::of_directory(&root, &committed.corpus, repository, git_ref, commit).unwrap();
        assert_eq!(built.files, committed.files, "{manifest_file}: regenerate with `compactbench datasets manifest`");
        assert!(committed.files.len() >= 8, "{manifest_file}");
    }
}
