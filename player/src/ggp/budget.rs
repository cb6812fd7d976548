//! Memory: a server-wide limit, what each running match has reserved of
//! it, and what a reservation buys a match (its budget: the prover's facts,
//! grounding's atoms and rules, native code, the search's node pool).
//! Admission control: a start whose budget does not fit in what is left
//! gets the prover alone, or, below that, a clear error.
//!
//! The bytes per unit are measured peaks (docs/player.md, "Memory"), so a
//! budget bounds what a match can allocate however hostile its rules.

use std::sync::{Arc, Mutex};

/// Bytes the front end holds per byte of rules while it reads and
/// validates them (measured: 39 per byte for `propel check` on 15.5 MB of
/// facts, 36 on a 139 MB file).
pub const PARSE_BYTES_PER_BYTE: u64 = 40;
/// Peak bytes per fact the prover derives in one state (measured: 364 MB
/// for a million static facts and a million legal moves).
pub const BYTES_PER_FACT: u64 = 200;
/// Peak bytes per ground rule and per atom of the relaxed model while
/// grounding, building and optimising the propnet (measured: 2.4 GB peak
/// for about 3M ground rules and 4M atoms, scripts/hostile/million.kif).
pub const BYTES_PER_RULE: u64 = 800;
pub const BYTES_PER_ATOM: u64 = 600;
/// Peak bytes per counter update while generating native code (docs/native.md:
/// 1.5 GB at the peak for base/amazons' 3.47M updates).
pub const BYTES_PER_UPDATE: u64 = 450;
/// Bytes per node of the search graph, edges included (measured about
/// 370 on breakthrough; states of big games are larger).
pub const BYTES_PER_NODE: u64 = 600;
/// Bytes a built machine keeps per edge of its network: the interpreted
/// network and its copies (the search's, the fallback's) and native code.
pub const KEPT_BYTES_PER_EDGE: u64 = 300;
/// What a match needs besides its limits (threads' stacks, the rules, logs).
pub const BASE_BYTES: u64 = 32 << 20;
/// The prover's share: two copies (the match's and the fallback's) of at
/// most this many bytes of facts each.
pub const PROVER_BYTES: u64 = 2 << 30;
/// The least build a match is given where a full one does not fit (less:
/// the prover alone).
pub const MIN_BUILD_BYTES: u64 = 256 << 20;
/// A match gets at most this share of the server's limit.
pub const MAX_SHARE: f64 = 0.5;
/// Bytes a build can use per second of start clock: grounding and
/// propnet building allocate at most about this fast, so more would not be
/// used in time.
pub const BUILD_BYTES_PER_SECOND: u64 = 256 << 20;

/// The server's memory and what running matches hold of it.
pub struct Memory {
    limit: u64,
    reserved: Mutex<u64>,
}

/// Memory held by one match; given back when dropped.
pub struct Reservation {
    memory: Arc<Memory>,
    pub bytes: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Ok(mut r) = self.memory.reserved.lock() {
            *r = r.saturating_sub(self.bytes);
        }
    }
}

/// What one match may use.
#[derive(Clone, Debug, PartialEq)]
pub struct Budget {
    pub bytes: u64,
    /// Build propnets and native code (false: the prover alone).
    pub build: bool,
    /// The part of `bytes` for the build, given back (less what the built
    /// machines keep) when the builder ends.
    pub build_bytes: u64,
    /// The part of `bytes` for the prover, given back once the match has
    /// moved to a built machine.
    pub prover_bytes: u64,
    /// Facts the prover may derive in one state (each of its two copies).
    pub prover_facts: usize,
    pub max_atoms: usize,
    pub max_rules: usize,
    /// Counter updates native code may have.
    pub max_updates: usize,
    pub pool: usize,
}

fn count(bytes: u64, per: u64) -> usize {
    usize::try_from(bytes / per).unwrap_or(usize::MAX)
}

impl Budget {
    /// A budget of the parts given (bytes each).
    fn of(parts: Parts, build: bool, pool: usize) -> Budget {
        let build_bytes = if build { parts.build } else { 0 };
        Budget {
            bytes: parts.base + parts.prover + parts.pool + build_bytes,
            build,
            build_bytes,
            prover_bytes: parts.prover,
            prover_facts: count(parts.prover / 2, BYTES_PER_FACT).min(propel_runtime::prover::MAX_FACTS_PER_STATE),
            max_atoms: count(build_bytes, BYTES_PER_ATOM),
            max_rules: count(build_bytes, BYTES_PER_RULE),
            max_updates: count(build_bytes, BYTES_PER_UPDATE),
            pool: count(parts.pool, BYTES_PER_NODE).min(pool).max(1_000),
        }
    }
}

/// A match's memory by use.
#[derive(Clone, Copy, Debug)]
struct Parts {
    /// Reading the rules, threads, logs.
    base: u64,
    prover: u64,
    pool: u64,
    build: u64,
}

impl Parts {
    fn total(&self, build: bool) -> u64 {
        self.base + self.prover + self.pool + if build { self.build } else { 0 }
    }

    /// Prover, pool and build scaled down alike until the total is at most `cap`.
    fn fit(self, cap: u64, build: bool) -> Parts {
        let total = self.total(build);
        if total <= cap {
            return self;
        }
        let k = cap.saturating_sub(self.base) as f64 / (total - self.base).max(1) as f64;
        let f = |x: u64| (x as f64 * k) as u64;
        Parts { base: self.base, prover: f(self.prover), pool: f(self.pool), build: f(self.build) }
    }
}

impl Memory {
    pub fn new(limit: u64) -> Arc<Memory> {
        Arc::new(Memory { limit, reserved: Mutex::new(0) })
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes not reserved by any match.
    pub fn left(&self) -> u64 {
        self.reserved.lock().map_or(0, |r| self.limit.saturating_sub(*r))
    }

    /// Reserves a match's memory: reading the rules, the prover, the
    /// search pool and a build that can use the start clock (all at most
    /// [`MAX_SHARE`] of the limit) when that fits in what is left; else
    /// the same scaled down to what is left, when its build gets at least
    /// [`MIN_BUILD_BYTES`]; else the prover and the pool alone in what is
    /// left, when that is at least what reading the rules and a small
    /// prover need; else the reason the match cannot start.
    pub fn admit(
        self: &Arc<Self>,
        rules_bytes: usize,
        start_clock: f64,
        pool: usize,
    ) -> Result<(Reservation, Budget), String> {
        let want = Parts {
            base: BASE_BYTES + PARSE_BYTES_PER_BYTE * rules_bytes as u64,
            prover: PROVER_BYTES,
            pool: pool as u64 * BYTES_PER_NODE,
            build: (start_clock.max(1.0) * BUILD_BYTES_PER_SECOND as f64) as u64,
        };
        let cap = (self.limit as f64 * MAX_SHARE) as u64;
        let least = want.base + (64 << 20);
        let mut reserved = self.reserved.lock().map_err(|_| "the player's memory account is poisoned".to_string())?;
        let left = self.limit.saturating_sub(*reserved);
        let full = want.fit(cap, true);
        // What is left, shared alike by the parts: a smaller build still
        // gives a network where the prover alone would be hundreds of
        // times slower (three matches at once on a 24 GB machine: the
        // third played chess on the prover at 3 iterations a second).
        let scaled = want.fit(left.min(cap), true);
        let budget = if left >= full.total(true) && cap >= 2 * least {
            Budget::of(full, true, pool)
        } else if scaled.build >= MIN_BUILD_BYTES && left >= 2 * least {
            Budget::of(scaled, true, pool)
        } else if left >= least {
            Budget::of(want.fit(left.min(cap), false), false, pool)
        } else {
            return Err(format!(
                "out of memory for a new match: {} MiB of the player's {} MiB are free, {} MiB needed",
                left >> 20,
                self.limit >> 20,
                least >> 20
            ));
        };
        *reserved += budget.bytes;
        Ok((Reservation { memory: self.clone(), bytes: budget.bytes }, budget))
    }
}

impl Reservation {
    /// Gives `bytes` back (what a finished build does not keep).
    pub fn shrink(&mut self, bytes: u64) {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        if let Ok(mut r) = self.memory.reserved.lock() {
            *r = r.saturating_sub(bytes);
        }
    }
}

/// This process's resident memory in bytes (Linux: `/proc/self/statm`).
pub fn resident() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Hands freed memory back to the system. glibc keeps what a match's
/// threads freed in their arenas; trimming returns it (see docs/player.md
/// for what stays without it).
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists under
    // its locks; it takes no pointers from us.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The machine's memory (Linux: `MemTotal` in `/proc/meminfo`).
pub fn machine_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A size like `8G`, `512M`, `100k` or plain bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mul) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let mul: u64 = match c.to_ascii_lowercase() {
                'k' => 1 << 10,
                'm' => 1 << 20,
                'g' => 1 << 30,
                't' => 1 << 40,
                _ => return Err(format!("`{s}`: unknown unit (k, M, G or T)")),
            };
            (&t[..i], mul)
        }
        _ => (t, 1),
    };
    let x: f64 = num.trim().parse().map_err(|_| format!("`{s}` is not a size (e.g. 8G, 512M)"))?;
    let bytes = x * mul as f64;
    if !bytes.is_finite() || bytes < (64 << 20) as f64 || bytes > (1u64 << 50) as f64 {
        return Err(format!("`{s}`: a memory limit must be between 64M and 1024T"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_gives_full_budgets_then_the_prover_then_refuses() {
        let m = Memory::new(8 << 30);
        let (a, ba) = m.admit(10_000, 2.0, 500_000).unwrap();
        assert!(ba.build && ba.bytes < 3 << 30, "{ba:?}");
        assert!(ba.max_rules > 500_000 && ba.prover_facts > 1_000_000 && ba.pool == 500_000, "{ba:?}");
        // Long clocks ask for more than half the limit: they get half.
        let (b, bb) = m.admit(10_000, 100.0, 500_000).unwrap();
        assert!(bb.build && bb.bytes <= 4 << 30 && bb.bytes > (4 << 30) - (1 << 20), "{bb:?}");
        assert!(bb.prover_facts < ba.prover_facts, "{bb:?}");
        // What is left is not a full budget: a smaller build.
        let (d, bd) = m.admit(10_000, 100.0, 500_000).unwrap();
        assert!(bd.build && bd.bytes < bb.bytes && bd.build_bytes >= MIN_BUILD_BYTES, "{bd:?}");
        assert!(bd.max_rules > 0 && bd.max_rules < bb.max_rules, "{bd:?} {bb:?}");
        drop(d);
        let (mut e, _) = m.admit(10_000, 100.0, 500_000).unwrap();
        assert!(m.left() < 1 << 20);
        // Too little left for a build: the prover alone.
        e.shrink(200 << 20);
        let (mut c, bc) = m.admit(10_000, 100.0, 500_000).unwrap();
        assert!(!bc.build && bc.bytes <= m.left() + bc.bytes && bc.max_rules == 0, "{bc:?}");
        assert!(m.admit(10_000, 1.0, 500_000).is_err() || m.left() >= 96 << 20);
        // Rules too big to read in what is left.
        c.shrink(1 << 20);
        assert_eq!(c.bytes, bc.bytes - (1 << 20));
        drop(c);
        let left = m.left();
        assert!(m.admit((left / PARSE_BYTES_PER_BYTE) as usize, 1.0, 500_000).is_err());
        drop((a, b, e));
        assert_eq!(m.left(), 8 << 30);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("8G").unwrap(), 8 << 30);
        assert_eq!(parse_size("512m").unwrap(), 512 << 20);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert!(parse_size("1k").is_err());
        assert!(parse_size("1e300").is_err());
        assert!(parse_size("nan").is_err());
        assert!(parse_size("5Q").is_err());
    }
}
