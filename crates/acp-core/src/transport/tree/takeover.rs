//! When the reaper does not act: the host kills the tree itself.
//!
//! What the reaper runs can stop it (`kill(getppid(), SIGSTOP)`, as the
//! same user), and then a kill written to the lifeline waits forever. So
//! the host gives the reaper a grace to act on a kill and, past it, walks
//! the tree below the reaper from `/proc` and SIGKILLs every live process
//! through a pidfd (see `procfs`), round after round until none is left,
//! then SIGKILLs the reaper (its own child, unreaped: a plain `kill`).
//! While the reaper lives, even stopped, it holds the tree: processes
//! orphaned meanwhile are reparented to it (a subreaper) and stay listed.
//!
//! Also here: what may have escaped when the reaper was killed by someone
//! else, for the exit report.

use libc::pid_t;

use super::procfs::{self, Stat};
use super::Escaped;

/// Rounds of "list the tree, SIGKILL what lives" at most.
const MAX_ROUNDS: u32 = 1000;
/// Processes listed per round at most (more are taken the next round).
const MAX_LISTED: usize = 16 * 1024;
/// How long the killed leader may take to become a zombie, for its status.
const STATUS_WAIT: std::time::Duration = std::time::Duration::from_secs(1);
/// Escapes named in a report at most.
pub(super) const MAX_ESCAPED: usize = 64;

/// What the host knows of the tree it started.
#[derive(Debug, Clone, Copy)]
pub(super) struct Known {
    /// The reaper: our child, not reaped while this runs.
    pub reaper: pid_t,
    /// The started process, as seen when it started (None: not seen).
    pub leader: Option<Stat>,
    /// Kill every process below the reaper; false (`keepDetached`): the
    /// leader's process group only.
    pub everything: bool,
}

/// The leader's wait status if it could be read (the leader ended and was
/// not yet reaped).
pub(super) fn kill_tree(known: &Known) -> Option<i32> {
    let mut pidfds_missing = false;
    if !known.everything {
        // Its group goes as a whole (orphans of the group included).
        if let Some(leader) = &known.leader {
            if let Ok(Some(fd)) = procfs::open(leader) {
                let _ = procfs::signal(&fd, libc::SIGKILL, procfs::GROUP);
            }
        }
    }
    for round in 0..MAX_ROUNDS {
        let live: Vec<Stat> = below(known.reaper)
            .into_iter()
            .filter(|p| p.live())
            .filter(|p| known.everything || Some(p.pgrp) == known.leader.map(|l| l.pid))
            .collect();
        if live.is_empty() {
            break;
        }
        for p in &live {
            match procfs::open(p) {
                Ok(Some(fd)) => {
                    let _ = procfs::signal(&fd, libc::SIGKILL, 0);
                }
                Ok(None) => {}
                Err(_) => pidfds_missing = true,
            }
        }
        if pidfds_missing {
            // Without pidfds only the reaper can be signalled safely: its
            // death takes the leader along (PR_SET_PDEATHSIG).
            break;
        }
        // Let the killed ones die (their children are reparented meanwhile).
        std::thread::sleep(std::time::Duration::from_millis(u64::from(round.min(10))));
    }
    known.leader.as_ref().and_then(final_status)
}

/// The wait status of `leader` once it is a zombie (None if it was reaped,
/// or does not end within [`STATUS_WAIT`]).
fn final_status(leader: &Stat) -> Option<i32> {
    let until = std::time::Instant::now() + STATUS_WAIT;
    loop {
        let now = procfs::stat(leader.pid).filter(|s| s.start == leader.start)?;
        if !now.live() {
            return Some(now.exit_code);
        }
        if std::time::Instant::now() > until {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Every process below `root` (not `root`), parents before children.
/// A process is listed as a child of its parent only if the parent is
/// still the same process after the listing, and the child's own stat
/// still names that parent.
pub(super) fn below(root: pid_t) -> Vec<Stat> {
    let mut out: Vec<Stat> = Vec::new();
    let Some(root_stat) = procfs::stat(root) else {
        return out;
    };
    let mut next = 0;
    let mut parent = root_stat;
    loop {
        if let Some(kids) = procfs::children(parent.pid) {
            let same = procfs::stat(parent.pid).is_some_and(|s| s.start == parent.start);
            if same {
                for kid in kids {
                    if out.len() >= MAX_LISTED {
                        return out;
                    }
                    // Reparented to the reaper meanwhile: still ours.
                    if let Some(s) =
                        procfs::stat(kid).filter(|s| s.ppid == parent.pid || s.ppid == root)
                    {
                        out.push(s);
                    }
                }
            }
        }
        // Breadth first over what was listed; zombies have no children.
        loop {
            let Some(p) = out.get(next) else {
                return out;
            };
            next += 1;
            if p.live() {
                parent = *p;
                break;
            }
        }
    }
}

/// After the reaper was killed (not by us): the live processes that may
/// be the tree's leftovers. Its processes are no longer below anything of
/// ours: they were reparented to the host's nearest subreaper ancestor
/// (or init). Named: the leader's session and group (what it did not
/// detach), and processes of our user started since the leader that now
/// have init or one of the host's ancestors for parent and are detached
/// (what it detached, among others' daemons). Not signalled: nothing
/// proves they are ours.
pub(super) fn escaped(leader: &Stat) -> Vec<Escaped> {
    let me = std::process::id() as pid_t;
    let mut ancestors = vec![1];
    let mut p = me;
    for _ in 0..64 {
        match procfs::stat(p) {
            Some(s) if s.ppid > 0 => {
                ancestors.push(s.ppid);
                p = s.ppid;
            }
            _ => break,
        }
    }
    // SAFETY: a plain system call.
    let uid = unsafe { libc::getuid() };
    let mut out = Vec::new();
    for pid in procfs::all_pids() {
        if pid == me || ancestors.contains(&pid) || out.len() >= MAX_ESCAPED {
            continue;
        }
        let Some(s) = procfs::stat(pid) else { continue };
        let ours = s.session == leader.pid || s.pgrp == leader.pid;
        // Detached: its session's leader is itself, or gone (`setsid`
        // then exit). A process of a live shell's session is not.
        let detached = s.session == pid || procfs::stat(s.session).is_none_or(|l| !l.live());
        let orphan = ancestors.contains(&s.ppid) && s.start >= leader.start && detached;
        if s.live() && (ours || orphan) && procfs::owner(pid) == Some(uid) {
            out.push(Escaped {
                pid: pid as u32,
                command: procfs::command(pid),
            });
        }
    }
    out
}
