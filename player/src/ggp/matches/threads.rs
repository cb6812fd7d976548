//! How many threads a match's search runs, where matches share the
//! machine's cores.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// How many threads a match's search runs.
#[derive(Clone, Debug)]
pub enum Threads {
    /// As many as the strategy says (`--threads`).
    Fixed,
    /// The machine's cores shared by the matches being played: a match
    /// that starts or ends changes the others' share at their next search.
    Share { cores: usize, playing: Arc<AtomicUsize> },
}

impl Threads {
    /// The cores of this machine shared among the matches played.
    pub fn share(cores: usize) -> Threads {
        Threads::Share { cores: cores.max(1), playing: Arc::new(AtomicUsize::new(0)) }
    }

    /// Counts a match as played until the guard drops.
    pub(super) fn playing(&self) -> Option<Playing> {
        match self {
            Threads::Fixed => None,
            Threads::Share { playing, .. } => {
                // Relaxed: the count only sizes thread pools; it guards no data.
                playing.fetch_add(1, Ordering::Relaxed);
                Some(Playing(playing.clone()))
            }
        }
    }

    /// A match's threads now (`None`: as configured).
    pub(super) fn now(&self) -> Option<usize> {
        match self {
            Threads::Fixed => None,
            // Relaxed: as in `playing`.
            Threads::Share { cores, playing } => Some((cores / playing.load(Ordering::Relaxed).max(1)).max(1)),
        }
    }
}

/// A match being played, counted in [`Threads::Share`].
pub(super) struct Playing(Arc<AtomicUsize>);

impl Drop for Playing {
    fn drop(&mut self) {
        // Relaxed: see `Threads::playing`.
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
