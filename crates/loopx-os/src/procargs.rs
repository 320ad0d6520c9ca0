//! macOS's `KERN_PROCARGS2` buffer, parsed: where a process's environment is read from.
//!
//! The layout (xnu `bsd/kern/kern_sysctl.c`, `sysctl_procargsx`): `argc` as a native 32-bit
//! integer, the executable's path, NUL padding, then `argc` NUL-terminated arguments, then
//! the environment's `NAME=VALUE` entries, NUL-terminated, ending at an empty one or the end.

/// The environment entries in `buffer`; empty when the buffer is malformed.
pub(crate) fn environment_of(buffer: &[u8]) -> Vec<&[u8]> {
    let Some((argc, rest)) = buffer.split_first_chunk::<4>() else {
        return Vec::new();
    };
    let Ok(argc) = usize::try_from(i32::from_ne_bytes(*argc)) else {
        return Vec::new();
    };
    // The executable's path, then padding: everything up to the first non-NUL after it.
    let Some(path_end) = rest.iter().position(|&b| b == 0) else {
        return Vec::new();
    };
    let Some(start) = rest[path_end..].iter().position(|&b| b != 0) else {
        return Vec::new();
    };
    let mut strings = rest[path_end + start..].split(|&b| b == 0);
    for _ in 0..argc {
        if strings.next().is_none() {
            return Vec::new();
        }
    }
    strings.take_while(|s| !s.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(argc: i32, path: &str, args: &[&str], env: &[&str]) -> Vec<u8> {
        let mut b = argc.to_ne_bytes().to_vec();
        b.extend_from_slice(path.as_bytes());
        b.extend_from_slice(&[0, 0, 0, 0]);
        for s in args.iter().chain(env) {
            b.extend_from_slice(s.as_bytes());
            b.push(0);
        }
        b.extend_from_slice(&[0, 0]);
        b
    }

    #[test]
    fn skips_the_path_and_arguments() {
        let b = buffer(
            2,
            "/bin/sleep",
            &["sleep", "LOOPX_SLICE=not-env"],
            &["HOME=/u", "LOOPX_SLICE=s1"],
        );
        assert_eq!(environment_of(&b), vec![&b"HOME=/u"[..], b"LOOPX_SLICE=s1"]);
    }

    #[test]
    fn malformed_buffers_hold_no_environment() {
        assert!(environment_of(b"").is_empty());
        assert!(environment_of(b"\x01\0\0").is_empty());
        assert!(environment_of(&buffer(5, "/bin/x", &["x"], &["A=1"])).is_empty());
        assert!(environment_of(&[1, 0, 0, 0, b'/', b'x']).is_empty());
        assert!(environment_of(&buffer(-1, "/bin/x", &[], &["A=1"])).is_empty());
    }
}
