//! How a search runs in each [`Mode`]: one thread, lane-parallel rollouts,
//! the pipeline (one thread selects, the others roll out) and root
//! parallelism (one tree a thread, merged at the root).

use super::*;

impl<M: Simulator> Search<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    /// One thread: lane-parallel where the machine can, else one rollout
    /// (or batch) per iteration.
    pub(super) fn run_single(&mut self, deadline: Instant, interrupt: &Interrupt<'_>) -> Result<Stats, MachineError> {
        if self.runner.is_some() {
            return self.run_lanes(deadline, interrupt, 0);
        }
        self.run_inline(deadline, interrupt)
    }

    /// Lane-parallel search: this thread's lanes, and `n` rollout threads
    /// with lanes of their own (see [`lanes`]).
    pub(super) fn run_lanes(
        &mut self,
        deadline: Instant,
        interrupt: &Interrupt<'_>,
        n: usize,
    ) -> Result<Stats, MachineError> {
        let start = Instant::now();
        let pin_threads = self.config.pin;
        if pin_threads {
            pin(0);
        }
        let seed = self.seeds.next_u64();
        // Enough requests that the rollout threads' lanes never wait.
        let target = n * LANES * 5 / 4;
        let requests = ArrayQueue::new(target.max(1));
        let replies = ArrayQueue::new(2 * target.max(1) + 2);
        let stop = AtomicBool::new(false);
        let mut workers = Vec::with_capacity(n);
        for _ in 0..n {
            let m = self.machine.clone();
            let runner = lane_runner(&m, &self.config).ok_or(MachineError::NoLaneCode)?;
            workers.push((m, runner));
        }
        let Search { graph, machine, runner, config, .. } = self;
        let Some(runner) = runner else { return Err(MachineError::NoLaneCode) };
        // The root may have moved since the last run: cut rollouts are
        // valued against the current one, in every thread's lanes.
        if let (Some(mat), Some(bits)) = (&config.material, graph.root_state().and_then(|s| machine.base_bits(s))) {
            runner.set_cutoff_reference(mat, bits);
            for (_, r) in &mut workers {
                r.set_cutoff_reference(mat, bits);
            }
        }
        let (streamed, counts, worker_errors) = std::thread::scope(|scope| {
            let (requests, replies, stop) = (&requests, &replies, &stop);
            let handles: Vec<_> = workers
                .into_iter()
                .enumerate()
                .map(|(t, (m, mut r))| {
                    scope.spawn(move || {
                        if pin_threads {
                            pin(t + 1);
                        }
                        let seed = seed.wrapping_add(1 + t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                        lanes::QueueSource::new(m, requests, replies, stop).run(&mut r, seed)
                    })
                })
                .collect();
            let remote = (n > 0).then(|| lanes::Remote::new(requests, replies, target));
            let mut source = lanes::TreeSource::new(graph, machine, remote, deadline, interrupt, config.inflight);
            let streamed = runner.stream(&mut source, seed, crate::playout::MAX_PLAYOUT_STEPS as u32);
            source.drain(stop, Duration::from_secs(1));
            // Release: see `drain`; set here too when there is no remote.
            stop.store(true, Ordering::Release);
            let errors: Vec<MachineError> = handles
                .into_iter()
                .filter_map(|h| match h.join() {
                    Ok(r) => r.err(),
                    Err(_) => Some(MachineError::ThreadPanicked { what: "rollout" }),
                })
                .collect();
            (streamed, (source.iterations, source.rollouts, source.error.take(), source.peak_inflight()), errors)
        });
        streamed?;
        let (iterations, rollouts, error, peak_inflight) = counts;
        if let Some(e) = error.or(worker_errors.into_iter().next()) {
            return Err(e);
        }
        Ok(Stats {
            seconds: start.elapsed().as_secs_f64(),
            iterations,
            rollouts,
            nodes: self.graph.live_nodes(),
            pool: self.graph.capacity(),
            search_busy: 1.0,
            rollout_idle: 0.0,
            per_request: 1,
            rollout_policy: String::new(),
            expand_after: 1,
            peak_inflight,
        })
    }

    /// One thread: select, roll out, back up.
    pub(super) fn run_inline(&mut self, deadline: Instant, interrupt: &Interrupt<'_>) -> Result<Stats, MachineError> {
        let start = Instant::now();
        let mut path = Vec::new();
        let mut rng = Rng::new(self.seeds.next_u64());
        let mut stats = Stats::default();
        if self.config.pin {
            pin(0);
        }
        // The clock is read after every iteration (tens of nanoseconds
        // against microseconds for an iteration): on the prover one
        // iteration can take most of a second, and a batch of them ran
        // seconds past the start clock (hitori: 16 in 10.4 s).
        loop {
            if let Some((_, n)) = self.iterate_here(&mut path, &mut rng)? {
                stats.rollouts += n as u64;
            }
            stats.iterations += 1;
            if Instant::now() >= deadline || self.graph.is_root_solved() || interrupt() {
                break;
            }
        }
        stats.seconds = start.elapsed().as_secs_f64();
        stats.nodes = self.graph.live_nodes();
        stats.pool = self.graph.capacity();
        stats.search_busy = 1.0;
        stats.per_request = self.per_request;
        Ok(stats)
    }

    /// One iteration with its rollouts (`per_request` of them, averaged)
    /// run on this thread; returns their time and number, or `None` when
    /// the leaf's value was known.
    pub(super) fn iterate_here(
        &mut self,
        path: &mut Vec<Step>,
        rng: &mut Rng,
    ) -> Result<Option<(Duration, u32)>, MachineError> {
        match self.graph.select(&mut self.machine, path)? {
            Leaf::Expand { .. } => Err(MachineError::SearchBug("an unexpanded child from an eager selection")),
            Leaf::Known(v) => {
                if let Some(mast) = &mut self.mast {
                    self.played.clear();
                    self.graph.path_moves(path, &mut self.played);
                    mast.update(&self.machine, &self.played, &v);
                }
                self.graph.backprop_known(path, &v);
                Ok(None)
            }
            Leaf::Rollout(s) => {
                let t0 = Instant::now();
                let mut sums: SmallVec<[f64; 4]> = SmallVec::from_elem(0.0, self.machine.roles().len());
                let count = self.per_request;
                let greedy = self.config.greedy_rollouts();
                let n = match &mut self.mast {
                    Some(mast) => {
                        let mut goals: SmallVec<[f64; 4]> = SmallVec::from_elem(0.0, sums.len());
                        for _ in 0..count.max(1) {
                            self.played.clear();
                            self.graph.path_moves(path, &mut self.played);
                            let m = &mut self.machine;
                            policy_rollout(m, &s, rng, &mut goals, greedy, mast, Some(&mut self.played))?;
                            goals.iter_mut().for_each(|g| *g /= 100.0);
                            mast.update(&self.machine, &self.played, &goals);
                            sums.iter_mut().zip(&goals).for_each(|(s, g)| *s += g);
                        }
                        count.max(1)
                    }
                    None => simulate(&mut self.machine, greedy, &s, count, rng, &mut sums, &|| false)?,
                };
                let v: SmallVec<[f64; 4]> = sums.iter().map(|x| x / n.max(1) as f64).collect();
                let took = t0.elapsed();
                self.graph.backprop(path, &v);
                Ok(Some((took, n)))
            }
        }
    }

    /// The fewest rollouts per request the adaptation goes down to.
    pub(super) fn min_per_request(&self) -> u32 {
        if self.config.batch {
            self.machine.preferred_batch()
        } else {
            1
        }
    }

    /// Backs up a rollout thread's reply along the path it was asked for.
    pub(super) fn absorb(&mut self, rep: &Reply, pending: &mut [Option<Vec<Step>>]) {
        if let Some(p) = pending.get_mut(rep.id as usize).and_then(Option::take) {
            let v: SmallVec<[f64; 4]> = rep.sums.iter().map(|s| s / rep.count as f64).collect();
            self.graph.backprop(&p, &v);
        }
    }

    /// The pipeline: this thread searches, `n` threads roll out.
    pub(super) fn run_pipeline(
        &mut self,
        deadline: Instant,
        interrupt: &Interrupt<'_>,
        n: usize,
    ) -> Result<Stats, MachineError> {
        let start = Instant::now();
        let requests: ArrayQueue<Request<M::State>> = ArrayQueue::new(QUEUE);
        let replies: ArrayQueue<Reply> = ArrayQueue::new(QUEUE * 2);
        // The flag only says "stop"; no data is published through it, and
        // the queues synchronise what they carry, so Relaxed would do;
        // Release/Acquire makes the intent plain at no measurable cost.
        let stop = AtomicBool::new(false);
        let idle_ns = AtomicU64::new(0);
        let rollouts = AtomicU64::new(0);
        let roles = self.machine.roles().len();
        let pin_threads = self.config.pin;
        let greedy = self.config.greedy_rollouts().cloned();
        let greedy = greedy.as_ref();
        let seed = self.seeds.next_u64();
        let mut stats = Stats::default();
        let result: Result<(), MachineError> = std::thread::scope(|scope| {
            let mut workers = Vec::new();
            for t in 0..n {
                let mut m = self.machine.clone();
                let (requests, replies, stop, idle_ns, rollouts) = (&requests, &replies, &stop, &idle_ns, &rollouts);
                workers.push(scope.spawn(move || -> Result<(), MachineError> {
                    if pin_threads {
                        pin(t + 1);
                    }
                    let mut rng = Rng::new(seed.wrapping_add(1 + t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    let mut idle_since: Option<Instant> = None;
                    while !stop.load(Ordering::Acquire) {
                        let Some(req) = requests.pop() else {
                            idle_since.get_or_insert_with(Instant::now);
                            std::hint::spin_loop();
                            std::thread::yield_now();
                            continue;
                        };
                        if let Some(t0) = idle_since.take() {
                            idle_ns.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
                        }
                        let mut sums: SmallVec<[f64; 4]> = SmallVec::from_elem(0.0, roles);
                        rng = Rng::new(rng.next_u64() ^ req.seed);
                        // A stop cuts a request short (after at least one
                        // playout): joining must not wait for dozens.
                        let stopped = || stop.load(Ordering::Acquire);
                        let done = simulate(&mut m, greedy, &req.state, req.count, &mut rng, &mut sums, &stopped)?;
                        rollouts.fetch_add(done as u64, Ordering::Relaxed);
                        let mut reply = Reply { id: req.id, sums, count: done };
                        // The reply queue has room for every request in flight.
                        while let Err(r) = replies.push(reply) {
                            reply = r;
                            if stop.load(Ordering::Acquire) {
                                break;
                            }
                            std::hint::spin_loop();
                        }
                    }
                    if let Some(t0) = idle_since {
                        idle_ns.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    }
                    Ok(())
                }));
            }
            if pin_threads {
                pin(0);
            }
            let r = self.search_loop(deadline, interrupt, &requests, &replies, &stop, &mut stats);
            stop.store(true, Ordering::Release);
            for w in workers {
                match w.join() {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => return Err(e),
                    Err(_) => return Err(MachineError::ThreadPanicked { what: "rollout" }),
                }
            }
            r
        });
        result?;
        stats.seconds = start.elapsed().as_secs_f64();
        stats.rollouts += rollouts.load(Ordering::Relaxed);
        stats.rollout_idle = idle_ns.load(Ordering::Relaxed) as f64 / 1e9 / (stats.seconds * n as f64);
        stats.nodes = self.graph.live_nodes();
        stats.pool = self.graph.capacity();
        stats.per_request = self.per_request;
        Ok(stats)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn search_loop(
        &mut self,
        deadline: Instant,
        interrupt: &Interrupt<'_>,
        requests: &ArrayQueue<Request<M::State>>,
        replies: &ArrayQueue<Reply>,
        stop: &AtomicBool,
        stats: &mut Stats,
    ) -> Result<(), MachineError> {
        let start = Instant::now();
        let mut pending: Vec<Option<Vec<Step>>> = Vec::new();
        let mut free_ids: Vec<u32> = Vec::new();
        let mut in_flight = 0usize;
        let mut path = Vec::new();
        // Time in the search thread's own rollouts.
        let mut own_time = Duration::ZERO;
        let mut seeds = Rng::new(self.seeds.next_u64());
        let mut own_rng = Rng::new(self.seeds.next_u64());
        let mut since_adapt = 0u32;
        loop {
            // Results first: they make the graph better for the next selection.
            while let Some(rep) = replies.pop() {
                in_flight -= 1;
                self.absorb(&rep, &mut pending);
                free_ids.push(rep.id);
            }
            if Instant::now() >= deadline || interrupt() {
                break;
            }
            if in_flight >= QUEUE || requests.is_full() {
                // All rollout capacity is busy: rather than wait for a
                // result, do an iteration with a rollout of our own (with
                // few cores the rollout threads are the bottleneck).
                if let Some((t, n)) = self.iterate_here(&mut path, &mut own_rng)? {
                    own_time += t;
                    stats.rollouts += n as u64;
                }
            } else {
                match self.graph.select(&mut self.machine, &mut path)? {
                    Leaf::Expand { .. } => {
                        return Err(MachineError::SearchBug("an unexpanded child from an eager selection"))
                    }
                    Leaf::Known(v) => self.graph.backprop_known(&path, &v),
                    Leaf::Rollout(state) => {
                        let id = free_ids.pop().unwrap_or_else(|| {
                            pending.push(None);
                            pending.len() as u32 - 1
                        });
                        pending[id as usize] = Some(std::mem::take(&mut path));
                        let req = Request { id, state, count: self.per_request, seed: seeds.next_u64() };
                        if let Err(req) = requests.push(req) {
                            // Cannot happen (checked above, single producer);
                            // fall back to no rollout for this path.
                            pending[req.id as usize] = None;
                            free_ids.push(req.id);
                        } else {
                            in_flight += 1;
                        }
                    }
                }
                // Adapt playouts per request: keep the request queue about
                // half full (rollout threads neither starve nor lag far behind).
                since_adapt += 1;
                if since_adapt == 256 {
                    since_adapt = 0;
                    let fill = requests.len() as f64 / QUEUE as f64;
                    if fill < 0.25 && self.per_request < 64 {
                        self.per_request += 1;
                    } else if fill > 0.75 && self.per_request > self.min_per_request() {
                        self.per_request -= 1;
                    }
                }
            }
            stats.iterations += 1;
            if self.graph.is_root_solved() {
                break;
            }
        }
        // Requests no rollout thread has taken will not run: take back the
        // visits their selections added.
        while let Some(req) = requests.pop() {
            in_flight -= 1;
            if let Some(p) = pending.get_mut(req.id as usize).and_then(Option::take) {
                self.graph.unvisit(&p);
            }
        }
        // Let the rollouts in flight finish (a stop cuts each request to
        // one playout), so their values are not lost, but briefly: the
        // deadline is often a move to answer. What does not come back in
        // time is taken back like the rest.
        stop.store(true, Ordering::Release);
        let t0 = Instant::now();
        while in_flight > 0 && t0.elapsed() < DRAIN {
            if let Some(rep) = replies.pop() {
                in_flight -= 1;
                self.absorb(&rep, &mut pending);
            } else {
                std::hint::spin_loop();
            }
        }
        for p in pending.iter_mut().filter_map(Option::take) {
            self.graph.unvisit(&p);
        }
        let total = start.elapsed();
        stats.search_busy = 1.0 - own_time.as_secs_f64() / total.as_secs_f64().max(1e-9);
        Ok(())
    }

    /// Root parallelisation: independent searches merged at the root.
    /// Root parallelisation: this search and `threads - 1` peers (made at
    /// the first run, each with its share of the pool and a seed of its
    /// own), each one thread on its own graph, all until the deadline.
    pub(super) fn run_root(&mut self, deadline: Instant, interrupt: &Interrupt<'_>) -> Result<Stats, MachineError> {
        let start = Instant::now();
        let n = self.config.threads;
        if self.peers.len() + 1 < n {
            let root =
                self.graph.root_state().cloned().ok_or(MachineError::SearchBug("a search without a root state"))?;
            let pool = (self.config.pool / n).max(1024);
            for t in self.peers.len() + 1..n {
                let cfg = Config {
                    threads: 1,
                    mode: Mode::Pipeline,
                    pool,
                    seed: self.config.seed.wrapping_add(t as u64 * 7919),
                    ..self.config.clone()
                };
                self.peers.push(Search::new(self.machine.clone(), root.clone(), cfg)?);
            }
        }
        let pin_threads = self.config.pin;
        let mut peers = std::mem::take(&mut self.peers);
        let (mine, theirs) = std::thread::scope(|scope| {
            // Peers made for more threads than run now sit this run out.
            let hs: Vec<_> = peers[..n - 1]
                .iter_mut()
                .enumerate()
                .map(|(t, p)| {
                    scope.spawn(move || {
                        if pin_threads {
                            pin(t + 1);
                        }
                        p.run_single(deadline, interrupt)
                    })
                })
                .collect();
            if pin_threads {
                pin(0);
            }
            let mine = self.run_single(deadline, interrupt);
            let theirs: Vec<Result<Stats, MachineError>> = hs
                .into_iter()
                .map(|h| h.join().unwrap_or(Err(MachineError::ThreadPanicked { what: "search" })))
                .collect();
            (mine, theirs)
        });
        self.peers = peers;
        let mut stats = mine?;
        for st in theirs {
            let st = st?;
            stats.iterations += st.iterations;
            stats.rollouts += st.rollouts;
            stats.nodes += st.nodes;
            stats.pool += st.pool;
        }
        stats.seconds = start.elapsed().as_secs_f64();
        stats.search_busy = 1.0;
        stats.rollout_idle = 0.0;
        Ok(stats)
    }
}
