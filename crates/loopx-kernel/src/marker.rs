//! The `LOOPX_SLICE` marker: a slice id plus a digest of the project root (`s3.1a2b3c4d5e6f`).
//!
//! The supervisor puts it in every slice's environment. The PTY crate sweeps leftovers by it in
//! `/proc/<pid>/environ`, across the whole machine: slice ids restart at `s1` in every project,
//! so the id alone would let one project's sweep kill another project's agent. `loopx report`
//! reads it back to learn which slice it writes for, and refuses a marker made for another
//! project. The digest is derived, not random, so both sides compute it from the root alone.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::errors::Invalid;
use crate::ids::SliceId;

/// Hex digits of the root's digest in a marker.
const DIGEST_HEX: usize = 12;

/// The marker of `slice` in the project at `project_root`.
pub fn slice_marker(project_root: &Path, slice: SliceId) -> String {
    format!("{slice}.{}", root_digest(project_root))
}

/// The slice a marker names, when it was made for the project at `project_root`.
pub fn marker_slice(project_root: &Path, marker: &str) -> Result<SliceId, Invalid> {
    let malformed = || {
        Invalid::Other(format!(
            "`LOOPX_SLICE={marker}` is not a slice marker (expected `s<N>.<{DIGEST_HEX} hex digits>`)\n(hint: only loopx sets LOOPX_SLICE, for the agent it runs)"
        ))
    };
    let (id, digest) = marker.split_once('.').ok_or_else(malformed)?;
    let slice: SliceId = id.parse().map_err(|_| malformed())?;
    if digest.len() != DIGEST_HEX || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(malformed());
    }
    if digest != root_digest(project_root) {
        return Err(Invalid::Other(format!(
            "slice marker `{marker}` belongs to another project, not `{}`\n(hint: run `loopx report` with the LOOPX_PROJECT the slice was given)",
            project_root.display()
        )));
    }
    Ok(slice)
}

fn root_digest(project_root: &Path) -> String {
    let digest = Sha256::digest(project_root.as_os_str().as_encoded_bytes());
    hex::encode(&digest[..DIGEST_HEX / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_reads_back_in_its_own_project_only() {
        let (a, b) = (Path::new("/p/a"), Path::new("/p/b"));
        let marker = slice_marker(a, SliceId(7));
        assert_ne!(marker, slice_marker(b, SliceId(7)));
        assert!(marker.starts_with("s7."), "{marker}");
        assert_eq!(marker.len(), "s7.".len() + DIGEST_HEX);
        assert_eq!(marker_slice(a, &marker), Ok(SliceId(7)));
        let elsewhere = marker_slice(b, &marker).expect_err("another project's marker");
        assert!(elsewhere.to_string().contains("another project"));
    }

    #[test]
    fn malformed_markers_are_refused() {
        let root = Path::new("/p/a");
        let good = slice_marker(root, SliceId(2));
        let digest = good.split_once('.').expect("a dot").1;
        for bad in [
            "s2",
            "t2.abc",
            "s2.xyz",
            &format!("s2.{digest}0"),
            &format!("q2.{digest}"),
        ] {
            let err = marker_slice(root, bad).expect_err(bad);
            assert!(
                err.to_string().contains("not a slice marker"),
                "{bad}: {err}"
            );
        }
    }
}
