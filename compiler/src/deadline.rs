//! When long work must stop: at a time, when another thread raises a flag,
//! or both. Grounding and evaluation look at it every few thousand steps,
//! so that a match's abort or a start clock ends their work promptly.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Debug, Default)]
pub struct Deadline {
    at: Option<Instant>,
    cancel: Option<Arc<AtomicBool>>,
}

impl Deadline {
    /// Never passes.
    pub fn none() -> Deadline {
        Deadline::default()
    }

    pub fn at(t: Instant) -> Deadline {
        Deadline { at: Some(t), cancel: None }
    }

    /// Also passes once `flag` is set.
    pub fn with_cancel(mut self, flag: Option<Arc<AtomicBool>>) -> Deadline {
        self.cancel = flag;
        self
    }

    /// The same flag, and the earlier of the two times.
    pub fn min(&self, t: Instant) -> Deadline {
        Deadline { at: Some(self.at.map_or(t, |a| a.min(t))), cancel: self.cancel.clone() }
    }

    /// The flag alone, without the time.
    pub fn cancel_only(&self) -> Deadline {
        Deadline { at: None, cancel: self.cancel.clone() }
    }

    pub fn time(&self) -> Option<Instant> {
        self.at
    }

    /// Whether the flag was raised.
    pub fn cancelled(&self) -> bool {
        // Relaxed: the flag publishes no data; a late read only delays the
        // stop by one more check interval.
        self.cancel.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Whether the work must stop now.
    pub fn passed(&self) -> bool {
        self.cancelled() || self.at.is_some_and(|d| Instant::now() > d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn passes_on_time_or_flag() {
        assert!(!Deadline::none().passed());
        let past = Instant::now() - Duration::from_millis(1);
        assert!(Deadline::at(past).passed());
        let far = Instant::now() + Duration::from_secs(3600);
        let flag = Arc::new(AtomicBool::new(false));
        let d = Deadline::at(far).with_cancel(Some(flag.clone()));
        assert!(!d.passed());
        assert!(!d.min(far + Duration::from_secs(1)).passed());
        assert!(d.min(past).passed());
        flag.store(true, Ordering::Relaxed);
        assert!(d.passed() && d.cancelled());
    }
}
