use super::*;

/// A two-lane toy: one base that flips each step; terminal when it
/// holds; one role with two always-legal inputs.
struct Toy;
impl LaneEval for Toy {
    fn state(&mut self, w: &mut [Word]) {
        w[1] = w[0]; // terminal = base
    }
    fn next(&mut self, w: &mut [Word]) {
        w[4] = !w[0]; // next = not base
    }
    fn goals(&mut self, _: &mut [Word]) {}
}

#[test]
fn toy_playouts_end_after_one_step_with_goals() {
    let plan = LanePlan {
        words: 5,
        terminal: 1,
        ones: vec![2],
        base: vec![0],
        next: vec![4],
        input: vec![3, 3],
        legal: vec![2, 2],
        goals: vec![(0, 100, 0), (0, 50, 2)],
        goal_net: false,
    };
    let mut lanes = Lanes::new(&plan);
    let start = [0u64];
    let n = 200;
    let (mut goals, mut lengths) = (vec![0; n], vec![0; n]);
    lanes.run(&plan, &mut Toy, &[(0, 2)], |_| &start[..], n, 9, 10, &mut goals, &mut lengths).unwrap();
    assert!(lengths.iter().all(|&l| l == 1));
    assert!(goals.iter().all(|&g| g == 100));
    let err = lanes.run(&plan, &mut Toy, &[(0, 2)], |_| &start[..], n, 9, 0, &mut goals, &mut lengths);
    assert_eq!(err, Err(LaneError::TooLong(0)));
    let err = lanes.run(&plan, &mut Toy, &[(0, 0)], |_| &start[..], n, 9, 10, &mut goals, &mut lengths);
    assert_eq!(err, Err(LaneError::NoLegalMove));
}

/// A step moves every base to its next word at once, where next
/// outputs are other bases' words (a rotation of three bases) as well
/// as where they are not (base 3 from word 5), and parked lanes keep
/// their state.
#[test]
fn bases_advance_together_through_aliased_next_words() {
    let plan = LanePlan {
        words: 6,
        terminal: 4,
        ones: vec![],
        base: vec![0, 1, 2, 3],
        next: vec![1, 2, 0, 5],
        input: vec![],
        legal: vec![],
        goals: vec![],
        goal_net: false,
    };
    let mut lanes = Lanes::new(&plan);
    assert_eq!((lanes.aliased.len(), lanes.direct.len()), (3, 1));
    let before: [Word; 6] = [0xa, 0xb, 0xc, 0xd, 0, 0xe];
    lanes.words.copy_from_slice(&before);
    lanes.advance(0);
    assert_eq!(lanes.words[..4], [0xb, 0xc, 0xa, 0xe]);
    // Lane 0 parked: its bits stay as they were.
    lanes.words.copy_from_slice(&before);
    lanes.advance(1);
    assert_eq!(lanes.words[..4], [0xa, 0xd, 0xa, 0xf]);
}

/// Every lane draws each of its legal inputs about equally often:
/// lanes with 1 to 70 legal inputs across two transposed blocks, and
/// with 1 to 11 among few candidates (the 8 x 8 tiles).
#[test]
fn draws_are_uniform_per_lane() {
    for (n, spread) in [(100, 70), (12, 11)] {
        draws_are_uniform(n, spread);
    }
}

fn draws_are_uniform(n: usize, spread: usize) {
    // Lane l may play inputs 0..=(l % spread) and the last input.
    let legal = |j: usize, l: usize| j <= l % spread || j == n - 1;
    let (plan, mut lanes) = one_role(n, legal);
    let rounds = 4000;
    let mut hits = vec![[0u32; LANES]; n];
    let mut rng = Rng::new(5);
    for _ in 0..rounds {
        lanes.clear_inputs();
        lanes.choose(&plan, 0..n, !0, 0, 0, 1, &mut rng).unwrap();
        for (j, h) in hits.iter_mut().enumerate() {
            for (l, x) in h.iter_mut().enumerate() {
                *x += (lanes.words[j] >> l & 1) as u32;
            }
        }
    }
    choose::tests::assert_uniform("lanes", &hits, rounds, legal);
}

/// A plan of `n` inputs of one role (input words `0..n`, legal words
/// `n..2n`) whose lane `l` may play `legal(j, l)`.
fn one_role(n: usize, legal: impl Fn(usize, usize) -> bool) -> (LanePlan, Lanes) {
    let plan = LanePlan {
        words: 2 * n as u32,
        terminal: 0,
        ones: vec![],
        base: vec![],
        next: vec![],
        input: (0..n as u32).collect(),
        legal: (n as u32..2 * n as u32).collect(),
        goals: vec![],
        goal_net: false,
    };
    let mut lanes = Lanes::new(&plan);
    for j in 0..n {
        lanes.words[n + j] = (0..LANES).filter(|&l| legal(j, l)).fold(0 as Word, |w, l| w | 1 << l);
    }
    (plan, lanes)
}

/// Win-first: a lane with one winning input legal always plays it, a
/// lane with two plays each half the time, and the other lanes draw
/// uniformly among all their legal inputs; with few candidates
/// (bit-sliced draws) and many (lane by lane).
#[test]
fn win_first_lanes_take_the_win_and_others_stay_uniform() {
    for (n, spread) in [(12, 11), (100, 70)] {
        // Lane l may play inputs 0..=(l % spread) and the last input;
        // inputs 5 and 7 win.
        let base = move |j: usize, l: usize| j <= l % spread || j == n - 1;
        let (plan, mut lanes) = one_role(n, base);
        lanes.set_win_first(&plan, &[7, 5, 5, n as u32 + 3]);
        assert_eq!(lanes.win_first(), &[5, 7], "sorted, deduplicated, unknown inputs dropped");
        let expected = move |j: usize, l: usize| match l % spread {
            k if k >= 7 => j == 5 || j == 7,
            k if k >= 5 => j == 5,
            _ => base(j, l),
        };
        let rounds = 3000;
        let mut hits = vec![[0u32; LANES]; n];
        let mut rng = Rng::new(8);
        for _ in 0..rounds {
            lanes.clear_inputs();
            lanes.choose(&plan, 0..n, !0, 0, 0, 1, &mut rng).unwrap();
            let moves: u32 = lanes.words[..n].iter().map(|w| w.count_ones()).sum();
            assert_eq!(moves, LANES as u32, "one move per lane");
            for (j, h) in hits.iter_mut().enumerate() {
                each_lane(lanes.words[j], |l| h[l] += 1);
            }
        }
        choose::tests::assert_uniform("win-first", &hits, rounds, expected);
    }
}

/// With no winning input legal in any lane (or none given), win-first
/// lanes choose exactly what plain lanes do, draw for draw.
#[test]
fn win_first_without_a_legal_win_changes_nothing() {
    let n = 40;
    let legal = |j: usize, l: usize| j != 3 && !(j * 7 + l).is_multiple_of(5);
    let (plan, plain) = one_role(n, legal);
    let mut win_first = plain.clone();
    win_first.set_win_first(&plan, &[3]);
    let mut out = Vec::new();
    for mut lanes in [plain, win_first] {
        let mut rng = Rng::new(21);
        let mut chosen = Vec::new();
        for _ in 0..20 {
            lanes.clear_inputs();
            lanes.choose(&plan, 0..n, !0 >> 3, 0, 0, 1, &mut rng).unwrap();
            chosen.extend_from_slice(&lanes.words[..n]);
        }
        out.push((chosen, rng.next_u64()));
    }
    assert_eq!(out[0], out[1]);
}

/// The scan of a dense run of legal words (as generated code lays
/// them out) chooses exactly what the word-by-word scan does.
#[test]
fn dense_and_scattered_legal_words_choose_alike() {
    let n = 37;
    // Inputs at words 0..n, legal words at n..2n (dense) or reversed.
    let dense = LanePlan {
        words: 2 * n as u32,
        terminal: 0,
        ones: vec![],
        base: vec![],
        next: vec![],
        input: (0..n as u32).collect(),
        legal: (n as u32..2 * n as u32).collect(),
        goals: vec![],
        goal_net: false,
    };
    let scattered = LanePlan { legal: (n as u32..2 * n as u32).rev().collect(), ..dense.clone() };
    let mut rng = Rng::new(3);
    for round in 0..50 {
        let word = |rng: &mut Rng| (rng.next_u64() as Word) << 64 | rng.next_u64() as Word;
        let legal: Vec<Word> = (0..n).map(|_| if rng.below(3) == 0 { 0 } else { word(&mut rng) }).collect();
        let live = word(&mut rng) | 1;
        let mut chosen = Vec::new();
        for plan in [&dense, &scattered] {
            let mut lanes = Lanes::new(plan);
            assert_eq!(lanes.dense_legal, std::ptr::eq(plan, &dense));
            for (j, &w) in legal.iter().enumerate() {
                lanes.words[plan.legal[j] as usize] = w | 1;
            }
            let mut r = Rng::new(round);
            lanes.choose(plan, 0..n, live, 0, 0, 1, &mut r).unwrap();
            chosen.push((lanes.words[..n].to_vec(), r.next_u64()));
        }
        assert_eq!(chosen[0], chosen[1], "round {round}");
        // Every live lane plays exactly one input.
        let all = chosen[0].0.iter().fold(0, |a, w| a | w);
        assert_eq!(all, live);
        assert_eq!(chosen[0].0.iter().map(|w| w.count_ones()).sum::<u32>(), live.count_ones());
    }
}
