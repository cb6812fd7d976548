//! Lane-parallel search: the search thread keeps every lane of the
//! machine's bit-parallel code busy with a rollout from a leaf of its own.
//! A lane whose game ends gives its result back up its path at once and is
//! refilled from a new selection, so up to [`LANES`] selections are in
//! flight; the visits each adds on its way down (a virtual loss until its
//! value comes back) spread them over the tree. Iterations per second are
//! then rollouts per second.
//!
//! The tree grows on the lanes too: a selection that ends at a move whose
//! child is not in the graph yet hands the lane the parent state and that
//! joint move; the lane's first step computes the child, whose state,
//! terminal flag and legal moves come back ([`LaneSource::expanded`]) and
//! go into the graph before the rollout goes on from there. The machine of
//! the search thread then only walks the graph.
//!
//! With more threads, each rollout thread runs lanes of its own, fed by the
//! search thread through two lock-free queues (crossbeam's `ArrayQueue`):
//! requests (a selection's leaf, or parent and joint move) one way, the
//! children found and the goals reached the other. The search thread tops
//! the requests up and takes the replies in whenever one of its own lanes
//! needs a new selection, so it shares the rollouts when the tree work is
//! light and leaves them to the others when it is not.

use super::graph::{Graph, Leaf, Outcome, Step};
use crate::lanes::{LaneSource, Refill, LANES};
use crate::machine::MachineError;
use crate::native::LaneRunner;
use crate::simulate::Simulator;
use crossbeam_queue::ArrayQueue;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What [`TreeSource::select`] found for a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Selected {
    /// A leaf to roll out from, or a child to expand.
    Leaf,
    /// Only known values so far: ask again after the lanes' next step.
    Later,
    /// The search is over.
    Over,
}

/// Selections in a row that may end at known values (terminal or solved)
/// before a lane is left idle for a step: near the end of a game most
/// selections do, and a selection loop that waited for a leaf to roll out
/// would keep the lanes in flight (whose children may be the ones that
/// solve the position) from ever coming back.
const KNOWN_RUN: u32 = 256;

/// A selection in flight: its path, the state its rollout starts from (the
/// parent's, for an expansion) and the joint move it expands with.
struct Slot<S> {
    path: Vec<Step>,
    state: Option<S>,
    joint: SmallVec<[u32; 4]>,
    expand: bool,
    /// The expansion's child joins the graph (else the rollout only
    /// starts there).
    attach: bool,
    /// A terminal child met by the expansion, made a node when its goals come.
    ended: Option<S>,
    /// The moves its rollout played (one bit per move index), where the
    /// lanes record them (RAVE).
    played: Vec<u64>,
}

impl<S> Default for Slot<S> {
    fn default() -> Self {
        Slot {
            path: Vec::new(),
            state: None,
            joint: SmallVec::new(),
            expand: false,
            attach: false,
            ended: None,
            played: Vec::new(),
        }
    }
}

/// A selection sent to a rollout thread.
pub(super) struct Request<S> {
    id: u32,
    state: S,
    /// The joint move to expand with (each role's input), or none: a rollout.
    joint: Option<SmallVec<[u32; 4]>>,
    /// Whether the expansion's child is sent back ([`Reply::Expanded`]).
    attach: bool,
}

/// What a rollout thread sends back: the child of an expansion, and the
/// goals of every rollout.
pub(super) enum Reply {
    Expanded {
        id: u32,
        child: Vec<u64>,
        terminal: bool,
        legal: Vec<Vec<u32>>,
    },
    /// `played`: the moves the rollout played, where the lanes record
    /// them (else empty).
    Finished {
        id: u32,
        goals: SmallVec<[i32; 4]>,
        played: Vec<u64>,
    },
}

/// The queues to the rollout threads, seen from the search thread.
pub(super) struct Remote<'q, S> {
    pub(super) requests: &'q ArrayQueue<Request<S>>,
    pub(super) replies: &'q ArrayQueue<Reply>,
    /// Selections to keep in flight on the rollout threads.
    pub(super) target: usize,
    /// Request ids not in use (slots `LANES + id`).
    free: Vec<u32>,
    in_flight: usize,
}

impl<'q, S> Remote<'q, S> {
    pub(super) fn new(requests: &'q ArrayQueue<Request<S>>, replies: &'q ArrayQueue<Reply>, target: usize) -> Self {
        Remote { requests, replies, target, free: Vec::new(), in_flight: 0 }
    }
}

/// The search graph as a source of lane playouts: each free lane gets the
/// leaf of a new selection; each ended lane's goals are backed up along
/// its selection's path. With a [`Remote`], it also keeps the rollout
/// threads supplied.
pub(super) struct TreeSource<'a, 'q, M: Simulator>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    graph: &'a mut Graph<M>,
    machine: &'a mut M,
    /// Slots `0..LANES` are this thread's lanes; the rest, requests.
    slots: Vec<Slot<M::State>>,
    remote: Option<Remote<'q, M::State>>,
    deadline: Instant,
    interrupt: &'a super::Interrupt<'a>,
    stopped: bool,
    pub(super) error: Option<MachineError>,
    pub(super) iterations: u64,
    pub(super) rollouts: u64,
    value: SmallVec<[f64; 4]>,
    /// This thread's lanes that may hold a selection at once
    /// ([`super::Config::inflight`]); the others idle.
    inflight: usize,
    /// This thread's lanes holding one now, and the most at once.
    active: usize,
    peak: usize,
}

impl<'a, 'q, M: Simulator> TreeSource<'a, 'q, M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    pub(super) fn new(
        graph: &'a mut Graph<M>,
        machine: &'a mut M,
        remote: Option<Remote<'q, M::State>>,
        deadline: Instant,
        interrupt: &'a super::Interrupt<'a>,
        inflight: usize,
    ) -> Self {
        TreeSource {
            graph,
            machine,
            slots: (0..LANES).map(|_| Slot::default()).collect(),
            remote,
            deadline,
            interrupt,
            stopped: false,
            error: None,
            iterations: 0,
            rollouts: 0,
            value: SmallVec::new(),
            inflight: inflight.clamp(1, LANES),
            active: 0,
            peak: 0,
        }
    }

    /// The most selections this thread's lanes held at once.
    pub(super) fn peak_inflight(&self) -> usize {
        self.peak
    }

    /// Selects until slot `k` holds a leaf to roll out (or a child to
    /// expand): [`Selected::Leaf`]; [`Selected::Later`] after
    /// [`KNOWN_RUN`] selections in a row that ended at known values;
    /// [`Selected::Over`] when the search is over (deadline, interrupt,
    /// solved root, or an error).
    fn select(&mut self, k: usize) -> Selected {
        let mut known = 0;
        loop {
            // The clock is read at every selection, as in the other modes: a
            // selection can cost much more than the read on slow machines.
            if self.stopped
                || self.error.is_some()
                || Instant::now() >= self.deadline
                || self.graph.is_root_solved()
                || (self.interrupt)()
            {
                self.stopped = true;
                return Selected::Over;
            }
            if known == KNOWN_RUN {
                return Selected::Later;
            }
            let slot = &mut self.slots[k];
            let leaf = match self.graph.select_lazy(self.machine, &mut slot.path) {
                Ok(leaf) => leaf,
                Err(e) => {
                    self.error = Some(e);
                    return Selected::Over;
                }
            };
            self.iterations += 1;
            let (state, expand, attach) = match leaf {
                Leaf::Known(v) => {
                    self.graph.backprop_known(&slot.path, &v);
                    known += 1;
                    continue;
                }
                Leaf::Rollout(s) => (s, false, false),
                Leaf::Expand { parent, joint, attach } => {
                    slot.joint = joint;
                    (parent, true, attach)
                }
            };
            if self.machine.base_bits(&state).is_none() {
                self.graph.unvisit(&slot.path);
                self.error = Some(MachineError::NoBaseBits);
                return Selected::Over;
            }
            (slot.state, slot.expand, slot.attach) = (Some(state), expand, attach);
            return Selected::Leaf;
        }
    }

    /// The child that slot `k`'s expansion found.
    fn on_expanded(&mut self, k: usize, child: &[u64], terminal: bool, legal: &[Vec<u32>]) {
        let Some(state) = self.machine.state_from_bits(child) else {
            self.error.get_or_insert(MachineError::NoBaseBits);
            return;
        };
        let slot = &mut self.slots[k];
        if terminal {
            slot.ended = Some(state);
        } else if let Err(e) = self.graph.attach(self.machine, &slot.path, state, Outcome::Legal(legal)) {
            self.error.get_or_insert(e);
        }
    }

    /// Slot `k`'s rollout ended with these goals: back them up.
    fn on_finished(&mut self, k: usize, goals: &[i32]) {
        self.value.clear();
        self.value.extend(goals.iter().map(|&g| g.max(0) as f64 / 100.0));
        let slot = &mut self.slots[k];
        if let Some(child) = slot.ended.take() {
            let r = self.graph.attach(self.machine, &slot.path, child, Outcome::Terminal(&self.value));
            if let Err(e) = r {
                self.error.get_or_insert(e);
            }
        }
        self.graph.backprop_moves(self.machine, &slot.path, &self.value, &slot.played);
        slot.played.clear();
        slot.state = None;
        self.rollouts += 1;
        if k < LANES {
            self.active = self.active.saturating_sub(1);
        }
    }

    /// Takes in the rollout threads' replies and, unless the search is
    /// over, tops their requests up.
    fn service(&mut self) {
        let Some(remote) = self.remote.as_mut() else { return };
        let replies = remote.replies;
        while let Some(rep) = replies.pop() {
            match rep {
                Reply::Expanded { id, child, terminal, legal } => {
                    self.on_expanded(LANES + id as usize, &child, terminal, &legal);
                }
                Reply::Finished { id, goals, played } => {
                    self.slots[LANES + id as usize].played = played;
                    self.on_finished(LANES + id as usize, &goals);
                    if let Some(r) = self.remote.as_mut() {
                        r.free.push(id);
                        r.in_flight -= 1;
                    }
                }
            }
        }
        while let Some(r) = self.remote.as_mut().filter(|r| r.in_flight < r.target) {
            let id = r.free.pop().unwrap_or_else(|| {
                self.slots.push(Slot::default());
                (self.slots.len() - 1 - LANES) as u32
            });
            let k = LANES + id as usize;
            if self.select(k) != Selected::Leaf {
                if let Some(r) = self.remote.as_mut() {
                    r.free.push(id);
                }
                return;
            }
            let slot = &self.slots[k];
            let Some(state) = slot.state.clone() else { return };
            let joint = slot.expand.then(|| slot.joint.clone());
            let attach = slot.attach;
            let Some(r) = self.remote.as_mut() else { return };
            match r.requests.push(Request { id, state, joint, attach }) {
                Ok(()) => r.in_flight += 1,
                Err(_) => {
                    // Full (cannot happen below the target): no rollout.
                    r.free.push(id);
                    self.graph.unvisit(&self.slots[k].path);
                    return;
                }
            }
        }
    }

    /// After the search: takes back the requests no rollout thread took,
    /// waits (up to `limit`) for the rest, and takes back the visits of
    /// whatever did not come back.
    pub(super) fn drain(&mut self, stop: &AtomicBool, limit: Duration) {
        let Some(remote) = self.remote.as_mut() else { return };
        while let Some(req) = remote.requests.pop() {
            remote.in_flight -= 1;
            remote.free.push(req.id);
            self.graph.unvisit(&self.slots[LANES + req.id as usize].path);
            self.slots[LANES + req.id as usize].state = None;
        }
        // Release: nothing is published through the flag (the queues
        // carry the data); Release/Acquire states the intent.
        stop.store(true, Ordering::Release);
        let t0 = Instant::now();
        while self.remote.as_ref().is_some_and(|r| r.in_flight > 0) && t0.elapsed() < limit {
            let before = self.rollouts;
            self.service();
            if self.rollouts == before {
                std::thread::yield_now();
            }
        }
        for slot in &mut self.slots[LANES..] {
            if slot.state.take().is_some() {
                self.graph.unvisit(&slot.path);
            }
        }
    }
}

impl<M: Simulator> LaneSource for TreeSource<'_, '_, M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    fn next_start(&mut self, lane: usize) -> Refill<'_> {
        self.service();
        if self.active >= self.inflight {
            return Refill::Later;
        }
        match self.select(lane) {
            Selected::Leaf => {
                self.active += 1;
                self.peak = self.peak.max(self.active);
            }
            Selected::Later => return Refill::Later,
            Selected::Over => return Refill::Stop,
        }
        let slot = &self.slots[lane];
        let bits = slot.state.as_ref().and_then(|s| self.machine.base_bits(s)).unwrap_or_default();
        if slot.expand {
            Refill::Expand { parent: bits, joint: &slot.joint, report: slot.attach }
        } else {
            Refill::Start(bits)
        }
    }

    fn finished(&mut self, lane: usize, goals: &[i32], _length: u32) {
        self.on_finished(lane, goals);
        // Replies keep coming in while this thread's lanes drain.
        self.service();
    }

    fn played(&mut self, lane: usize, inputs: &[u64]) {
        let p = &mut self.slots[lane].played;
        p.clear();
        p.extend_from_slice(inputs);
    }

    fn expanded(&mut self, lane: usize, child: &[u64], terminal: bool, legal: &[Vec<u32>]) {
        self.on_expanded(lane, child, terminal, legal);
    }

    fn stop_now(&mut self) -> bool {
        if !self.stopped && (Instant::now() >= self.deadline || (self.interrupt)()) {
            self.stopped = true;
        }
        self.stopped
    }
}

/// A rollout thread's side: lanes fed from the request queue.
pub(super) struct QueueSource<'q, M: Simulator>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    /// For reading states' bits.
    machine: M,
    requests: &'q ArrayQueue<Request<M::State>>,
    replies: &'q ArrayQueue<Reply>,
    stop: &'q AtomicBool,
    /// Per lane: the request it plays.
    ids: [u32; LANES],
    /// Per lane: whether its expansion's child is sent back.
    attach: [bool; LANES],
    states: Vec<Option<M::State>>,
    joints: Vec<SmallVec<[u32; 4]>>,
    /// Per lane: the moves its rollout played (where the lanes record them).
    played: Vec<Vec<u64>>,
    /// Requests asked for in vain since the last one came.
    misses: u32,
}

impl<'q, M: Simulator> QueueSource<'q, M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    pub(super) fn new(
        machine: M,
        requests: &'q ArrayQueue<Request<M::State>>,
        replies: &'q ArrayQueue<Reply>,
        stop: &'q AtomicBool,
    ) -> Self {
        QueueSource {
            machine,
            requests,
            replies,
            stop,
            ids: [0; LANES],
            attach: [false; LANES],
            states: vec![None; LANES],
            joints: vec![SmallVec::new(); LANES],
            played: vec![Vec::new(); LANES],
            misses: 0,
        }
    }

    /// Sends `reply`, waiting while the queue is full (the search thread
    /// takes replies in at every selection; it has room for two per
    /// request in flight).
    fn send(&self, mut reply: Reply) {
        while let Err(r) = self.replies.push(reply) {
            reply = r;
            std::thread::yield_now();
        }
    }

    /// Runs lanes until told to stop and every lane's game has ended.
    pub(super) fn run(&mut self, runner: &mut LaneRunner, seed: u64) -> Result<(), MachineError> {
        runner.stream(self, seed, crate::playout::MAX_PLAYOUT_STEPS as u32)
    }
}

impl<M: Simulator> LaneSource for QueueSource<'_, M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    fn next_start(&mut self, lane: usize) -> Refill<'_> {
        let Some(req) = self.requests.pop() else {
            // Acquire: pairs with the search thread's Release (see `drain`).
            if self.stop.load(Ordering::Acquire) {
                return Refill::Stop;
            }
            // Nothing to do: leave the core to the search thread for a
            // while (with two cores, spinning would take it from it).
            self.misses += 1;
            if self.misses.is_multiple_of(LANES as u32) {
                std::thread::yield_now();
            }
            return Refill::Later;
        };
        self.misses = 0;
        self.ids[lane] = req.id;
        self.attach[lane] = req.attach;
        let expand = req.joint.is_some();
        self.joints[lane] = req.joint.unwrap_or_default();
        let state = self.states[lane].insert(req.state);
        let bits = self.machine.base_bits(state).unwrap_or_default();
        if expand {
            Refill::Expand { parent: bits, joint: &self.joints[lane], report: self.attach[lane] }
        } else {
            Refill::Start(bits)
        }
    }

    fn finished(&mut self, lane: usize, goals: &[i32], _length: u32) {
        self.states[lane] = None;
        let played = std::mem::take(&mut self.played[lane]);
        self.send(Reply::Finished { id: self.ids[lane], goals: goals.iter().copied().collect(), played });
    }

    fn played(&mut self, lane: usize, inputs: &[u64]) {
        self.played[lane] = inputs.to_vec();
    }

    fn expanded(&mut self, lane: usize, child: &[u64], terminal: bool, legal: &[Vec<u32>]) {
        let legal = if terminal { Vec::new() } else { legal.to_vec() };
        self.send(Reply::Expanded { id: self.ids[lane], child: child.to_vec(), terminal, legal });
    }

    fn stop_now(&mut self) -> bool {
        // Acquire: as in `next_start`.
        self.stop.load(Ordering::Acquire)
    }
}
