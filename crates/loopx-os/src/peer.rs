//! Who is on the other end of a loopback TCP connection: a process inside a slice, or not.
//!
//! Slices share the host's loopback (agents need the network), so an agent can connect to
//! loopx's own listeners (the board) and hold their connection slots. A listener asks
//! [`tcp_peer_in_slice`] at accept and refuses such a connection at once. The kernel gives no
//! peer credentials for TCP, so the answer comes from `/proc`: the client's socket is the
//! entry of `/proc/net/tcp` whose local address is the connection's remote one, and its owner
//! is the process holding that socket's inode. Only processes in another PID namespace than
//! the listener's are searched (every contained slice has its own), so the cost is one
//! `readlink` per process plus the descriptors of the slices' processes.

use std::net::SocketAddr;

/// Whether the client of the connection `local` ← `peer` (both on this host) is a process in a
/// slice, that is in another PID namespace than this one. `false` when it
/// cannot be told (the socket is gone, `/proc` unreadable): the listener's own deadlines and
/// slots still bound such a connection.
pub fn tcp_peer_in_slice(local: SocketAddr, peer: SocketAddr) -> bool {
    let Some(inode) = client_socket_inode(local, peer) else {
        return false;
    };
    let link = format!("socket:[{inode}]");
    let own_ns = std::fs::read_link("/proc/self/ns/pid").ok();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let ns = std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok();
        let other_ns = ns.is_some() && own_ns.is_some() && ns != own_ns;
        if other_ns && holds(pid, &link) {
            return true;
        }
    }
    false
}

/// Whether process `pid` has a descriptor on `link` (`socket:[INODE]`).
fn holds(pid: u32, link: &str) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target.as_os_str() == link))
}

/// The inode of the client's socket of the connection `local` ← `peer`.
fn client_socket_inode(local: SocketAddr, peer: SocketAddr) -> Option<u64> {
    let (table, peer_text, local_text) = match (local, peer) {
        (SocketAddr::V4(l), SocketAddr::V4(p)) => (
            "/proc/net/tcp",
            v4(p.ip().octets(), p.port()),
            v4(l.ip().octets(), l.port()),
        ),
        (SocketAddr::V6(l), SocketAddr::V6(p)) => (
            "/proc/net/tcp6",
            v6(p.ip().octets(), p.port()),
            v6(l.ip().octets(), l.port()),
        ),
        _ => return None,
    };
    let text = std::fs::read_to_string(table).ok()?;
    text.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // sl local_address rem_address st tx:rx tr:tm retrnsmt uid timeout inode
        let (from, to, inode) = (fields.get(1)?, fields.get(2)?, fields.get(9)?);
        (from.eq_ignore_ascii_case(&peer_text) && to.eq_ignore_ascii_case(&local_text))
            .then(|| inode.parse().ok())
            .flatten()
    })
}

/// An IPv4 address as `/proc/net/tcp` prints it: the address's bytes read as a native
/// integer, then the port, in hex.
fn v4(octets: [u8; 4], port: u16) -> String {
    format!("{:08X}:{port:04X}", u32::from_ne_bytes(octets))
}

/// An IPv6 address as `/proc/net/tcp6` prints it: four native 32-bit words, then the port.
fn v6(octets: [u8; 16], port: u16) -> String {
    let mut text = String::new();
    for word in octets.chunks_exact(4) {
        let word: [u8; 4] = [word[0], word[1], word[2], word[3]];
        text.push_str(&format!("{:08X}", u32::from_ne_bytes(word)));
    }
    format!("{text}:{port:04X}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_from_this_process_is_not_from_a_slice() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let client =
            std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (server, peer) = listener.accept().expect("accept");
        let local = server.local_addr().expect("local");
        assert_eq!(peer, client.local_addr().expect("client"));
        assert!(
            client_socket_inode(local, peer).is_some(),
            "found in /proc/net/tcp"
        );
        assert!(!tcp_peer_in_slice(local, peer));
    }
}
