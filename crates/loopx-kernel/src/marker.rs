//! The `LOOPX_SLICE` marker: a slice id plus a digest of the project root (`s3.1a2b3c4d5e6f`).
//!
//! The supervisor puts it in every slice's environment. The PTY crate sweeps leftovers by it in
//! `/proc/<pid>/environ`, across the whole machine: slice ids restart at `s1` in every project,
//! so the id alone would let one project's sweep kill another project's agent. The digest is
//! derived, not random, so every supervisor of the project computes it from the root alone.
//! (`loopx report` does not read it: a report names its slice by the channel it is sent on.)

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::ids::SliceId;

/// Hex digits of the root's digest in a marker.
const DIGEST_HEX: usize = 12;

/// The marker of `slice` in the project at `project_root`.
pub fn slice_marker(project_root: &Path, slice: SliceId) -> String {
    format!("{slice}.{}", root_digest(project_root))
}

fn root_digest(project_root: &Path) -> String {
    let digest = Sha256::digest(project_root.as_os_str().as_encoded_bytes());
    hex::encode(&digest[..DIGEST_HEX / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_names_its_slice_and_its_project() {
        let (a, b) = (Path::new("/p/a"), Path::new("/p/b"));
        let marker = slice_marker(a, SliceId(7));
        assert_ne!(marker, slice_marker(b, SliceId(7)));
        assert_eq!(marker, slice_marker(a, SliceId(7)), "derived, not random");
        assert!(marker.starts_with("s7."), "{marker}");
        assert_eq!(marker.len(), "s7.".len() + DIGEST_HEX);
    }
}
