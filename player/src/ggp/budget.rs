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
/// validates them (measured: 36 per byte for `check` on a 139 MB file).
pub const PARSE_BYTES_PER_BYTE: u64 = 40;
/// Peak bytes per fact the prover derives in one state.
pub const BYTES_PER_FACT: u64 = 100;
/// Peak bytes per ground rule while grounding, building and optimising
/// the propnet.
pub const BYTES_PER_RULE: u64 = 400;
/// Peak bytes per atom of the relaxed model while grounding.
pub const BYTES_PER_ATOM: u64 = 200;
/// Peak bytes per counter update while generating native code (about 52
/// per update of machine code, plus the IR of a batch).
pub const BYTES_PER_UPDATE: u64 = 100;
/// Bytes per node of the search graph, edges included.
pub const BYTES_PER_NODE: u64 = 400;
/// What a match needs besides its limits (threads' stacks, the prover's
/// rules, logs).
pub const BASE_BYTES: u64 = 32 << 20;
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
    pub prover_facts: usize,
    pub max_atoms: usize,
    pub max_rules: usize,
    /// Counter updates native code may have.
    pub max_updates: usize,
    pub pool: usize,
}

impl Budget {
    /// How `bytes` are shared: the prover (and the handler's copy of it)
    /// a quarter, a build half, the search pool a quarter; a match served
    /// by the prover alone splits them between the prover and the pool.
    pub fn of(bytes: u64, rules_bytes: usize, build: bool, pool: usize) -> Budget {
        let usable = bytes.saturating_sub(BASE_BYTES + PARSE_BYTES_PER_BYTE * rules_bytes as u64);
        let (prover, builder) = if build { (usable / 4, usable / 2) } else { (usable / 2, 0) };
        let pool_bytes = usable / 4;
        let count = |b: u64, per: u64| usize::try_from(b / per).unwrap_or(usize::MAX);
        Budget {
            bytes,
            build,
            // The prover derives its facts twice over (the match's and
            // the fallback's copy).
            prover_facts: count(prover / 2, BYTES_PER_FACT).min(propel_runtime::prover::MAX_FACTS_PER_STATE),
            max_atoms: count(builder, BYTES_PER_ATOM),
            max_rules: count(builder, BYTES_PER_RULE),
            max_updates: count(builder, BYTES_PER_UPDATE),
            pool: count(pool_bytes, BYTES_PER_NODE).min(pool).max(1_000),
        }
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

    /// Reserves a match's memory: a full budget (from the start clock:
    /// what a build can use in that time, at most [`MAX_SHARE`] of the
    /// limit) when it fits, else what is left for the prover alone when
    /// that is at least what reading the rules and a small prover need;
    /// else the reason it cannot start.
    pub fn admit(
        self: &Arc<Self>,
        rules_bytes: usize,
        start_clock: f64,
        pool: usize,
    ) -> Result<(Reservation, Budget), String> {
        let parse = PARSE_BYTES_PER_BYTE * rules_bytes as u64;
        let clock = (start_clock.max(1.0) * BUILD_BYTES_PER_SECOND as f64) as u64;
        let full = (BASE_BYTES + parse + clock).min((self.limit as f64 * MAX_SHARE) as u64);
        let least = BASE_BYTES + parse + (16 << 20);
        let mut reserved = self.reserved.lock().map_err(|_| "the player's memory account is poisoned".to_string())?;
        let left = self.limit.saturating_sub(*reserved);
        let (bytes, build) = if left >= full && full >= 2 * least {
            (full, true)
        } else if left >= least {
            (left.min(full), false)
        } else {
            return Err(format!(
                "out of memory for a new match: {} MiB of the player's {} MiB are free, {} MiB needed",
                left >> 20,
                self.limit >> 20,
                least >> 20
            ));
        };
        *reserved += bytes;
        Ok((Reservation { memory: self.clone(), bytes }, Budget::of(bytes, rules_bytes, build, pool)))
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
        let m = Memory::new(2 << 30);
        let (a, ba) = m.admit(10_000, 2.0, 500_000).unwrap();
        assert!(ba.build && ba.bytes < 1 << 30, "{ba:?}");
        assert!(ba.max_rules > 100_000 && ba.prover_facts > 100_000 && ba.pool > 1_000, "{ba:?}");
        // Long clocks ask for half the limit; the second such start gets what is left.
        let (b, bb) = m.admit(10_000, 100.0, 500_000).unwrap();
        assert!(bb.build && bb.bytes == 1 << 30, "{bb:?}");
        let (c, bc) = m.admit(10_000, 100.0, 500_000).unwrap();
        assert!(!bc.build && bc.bytes == m.limit() - ba.bytes - bb.bytes, "{bc:?}");
        assert_eq!(bc.max_rules, 0);
        assert!(m.admit(10_000, 1.0, 500_000).is_err());
        // Rules too big to read in what is left.
        drop(c);
        assert!(m.admit(16 << 20, 1.0, 500_000).is_err());
        drop((a, b));
        assert_eq!(m.left(), 2 << 30);
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
