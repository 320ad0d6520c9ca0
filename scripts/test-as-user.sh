#!/usr/bin/env bash
# Runs the containment suites again as an unprivileged user in a delegated cgroup, the way
# people run loopx (docs/permissions.md, "As a normal user"). Run as root after the main
# `cargo nextest run`: it reuses that build.
#
# - creates the user `loopx-test` (LOOPX_TEST_USER names another) when it is missing;
# - delegates a cgroup to it: on cgroup v2 a child of the root with `pids` and `memory`
#   whose directory, `cgroup.procs`, `cgroup.subtree_control` and `cgroup.threads` it owns
#   (what systemd's `Delegate=yes` gives); on v1 a subtree of the `pids` and `memory`
#   hierarchies chowned to it;
# - archives the test binaries (`cargo nextest archive`), moves this shell into the
#   delegated cgroup and runs them as the user with `setpriv` (no PAM, so no session moves
#   it elsewhere), with LOOPX_TEST_EXPECT_CGROUP=1: a slice without its cgroup fails.
#
# The suites: the containment, escape, attack, permission, worktree and report-channel tests
# of the e2e binary, the board's refusal of slices' connections, loopx-pty's own, and the real agent CLIs in their loopback-only network namespace
# when LOOPX_AGENT_CLIS names them.
set -euo pipefail
cd "$(dirname "$0")/.."
workspace=$PWD
user=${LOOPX_TEST_USER:-loopx-test}

if [ "$(id -u)" != 0 ]; then
    echo "test-as-user: run as root (it creates the user $user and delegates a cgroup to it)" >&2
    exit 2
fi
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
home=$(getent passwd "$user" | cut -d: -f6)
uid=$(id -u "$user")

# The test binaries name the workspace's files and binaries by path: the user must be able to
# walk to them. A directory on the way that others may not enter gets an entry for this user
# only (an ACL where setfacl exists, else o+x: entering, not listing).
dir=$workspace
while [ "$dir" != / ]; do
    if ! setpriv --reuid "$uid" --regid "$(id -g "$user")" --init-groups test -x "$dir"; then
        if command -v setfacl >/dev/null; then
            setfacl -m "u:$user:x" "$dir"
        else
            chmod o+x "$dir"
        fi
        echo "test-as-user: let $user enter $dir"
    fi
    dir=$(dirname "$dir")
done

# The delegated cgroup.
cgroups=()
expect_cgroup=1
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    base=/sys/fs/cgroup/loopx-test-$user
    mkdir -p "$base"
    echo "+pids +memory" > /sys/fs/cgroup/cgroup.subtree_control
    chown "$user" "$base" "$base/cgroup.procs" "$base/cgroup.subtree_control" "$base/cgroup.threads"
    cgroups+=("$base")
    # On v2 a cgroup that holds processes cannot hand controllers to children: loopx divides
    # the cgroup it runs alone in (a `systemd-run --scope`), and here it shares one with the
    # test binaries. The suites then hold loopx to the per-process limits.
    expect_cgroup=0
    echo "test-as-user: cgroup v2: the slices' own cgroups are not required in this pass"
else
    for controller in pids memory; do
        base=/sys/fs/cgroup/$controller/loopx-test-$user
        mkdir -p "$base"
        chown -R "$user" "$base"
        cgroups+=("$base")
    done
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
chmod 755 "$scratch"
cargo nextest archive -p loopx-cli -p loopx-pty -p loopx-model-server \
    --archive-file "$scratch/tests.tar.zst"
# cargo-nextest may live in root's home (`cargo install`), which the user cannot enter.
cp "$(command -v cargo-nextest)" "$scratch/cargo-nextest"
chmod 755 "$scratch/cargo-nextest"
chmod 644 "$scratch/tests.tar.zst"

filter='(binary(e2e) & (test(/^containment::/) | test(/^escape::/) | test(/^attacks::/) | test(/^permissions::/) | test(/^worktrees::/) | test(/^report::/) | test(=board::an_agent_cannot_take_the_person_s_board))) | package(loopx-pty)'

# This shell joins the cgroup (as root: the user may not move a process across the root's
# hierarchy), and the user's processes are born in it.
for cgroup in "${cgroups[@]}"; do
    echo $$ > "$cgroup/cgroup.procs"
done
echo "test-as-user: as $user (uid $uid) in ${cgroups[*]}"
cd "$home"
# As the user, with only what a login would give, the build's archive and the cgroup
# expectation: `as_user [VAR=VALUE…] -- NEXTEST-ARGS…`.
as_user() {
    local vars=()
    while [ "$1" != -- ]; do vars+=("$1"); shift; done
    shift
    local extracted status
    extracted=$(mktemp -d -p "$scratch")
    chown "$user" "$extracted"
    "${wrap[@]}" env -i HOME="$home" USER="$user" LOGNAME="$user" PATH=/usr/local/bin:/usr/bin:/bin \
        LANG=C.UTF-8 LOOPX_TEST_EXPECT_CGROUP=$expect_cgroup "${vars[@]}" \
        setpriv --reuid "$uid" --regid "$(id -g "$user")" --init-groups \
        "$scratch/cargo-nextest" nextest run --archive-file "$scratch/tests.tar.zst" \
        --workspace-remap "$workspace" --extract-to "$extracted" --profile ci "$@" || status=$?
    # Each pass extracts the whole archive; the next one should not find the disk full of it.
    rm -rf "$extracted"
    return "${status:-0}"
}
wrap=()
as_user -- -E "$filter"
if [ -n "${LOOPX_AGENT_CLIS:-}" ]; then
    # The real CLIs run in an `unshare -r` namespace, where the user is uid 0. Their temp
    # files go in a temp dir of the user's; but Codex and Claude Code also keep fixed names in
    # /tmp per uid (`/tmp/codex-daemon-0`, `/tmp/claude-0`), which root's pass before made and
    # they refuse as not their own. In a mount namespace of this run each is covered by an
    # empty directory of the user's. The test builds loopx with cargo, which is root's: the
    # build just made is given instead.
    mkdir "$scratch/tmp"
    chown "$user" "$scratch/tmp"
    covers=true
    for name in codex-daemon-0 claude-0 codex-bwrap-synthetic-mount-targets-0; do
        [ -d "/tmp/$name" ] || continue
        mkdir -m 700 "$scratch/tmp/$name"
        chown "$user" "$scratch/tmp/$name"
        covers="$covers && mount --bind '$scratch/tmp/$name' '/tmp/$name'"
    done
    wrap=(unshare -m --propagation private sh -c "$covers && exec \"\$@\"" sh)
    as_user TMPDIR="$scratch/tmp" LOOPX_AGENT_CLIS="$LOOPX_AGENT_CLIS" \
        LOOPX_TEST_BUILT_LOOPX="$workspace/target/debug/loopx" -- -E 'test(real_clis_in_netns)'
fi
