use propel_runtime::propnet::{PropnetMachine, Topology};
use propel_runtime::{Rng, StateMachine};
use std::sync::Arc;
#[test]
fn scratch() {
    let g = Arc::new(propel_compiler::load_file(std::path::Path::new("/work/shared/games/base/chess.kif")).unwrap());
    let names: Vec<String> = std::env::var("ASK").unwrap().split(',').map(String::from).collect();
    let rels: Vec<_> = names.iter().map(|n| g.relation_by_name(n).unwrap()).collect();
    let r = Arc::new(propel_compiler::queries::residual(&g, &rels).unwrap());
    let t = std::time::Instant::now();
    let passes: Vec<_> = propel_compiler::propnet::passes::Pass::DEFAULT
        .iter()
        .copied()
        .filter(|&p| p != propel_compiler::propnet::passes::Pass::Goals)
        .collect();
    let c = propel_compiler::pipeline::compile(&r, &propel_tests::test_limits(), &passes).unwrap();
    println!("build {:.1} s: {}", t.elapsed().as_secs_f64(), c.net.counts());
    let qs: Vec<_> = r.queries.iter().map(|q| q.question.clone()).collect();
    let rules = Arc::new(propel_compiler::topdown::Rules::new(&r, &qs).unwrap());
    let topo = Topology::new(&c.net, None).with_questions(&c.net, rules).unwrap();
    let mut m = PropnetMachine::new(Arc::new(topo));
    let mut rng = Rng::new(1);
    let t = std::time::Instant::now();
    let mut states = 0;
    let mut games = 0;
    while t.elapsed().as_secs_f64() < 10.0 {
        let mut s = m.initial_state().unwrap();
        games += 1;
        while !m.is_terminal(&s).unwrap() {
            let mut j = vec![];
            for ro in 0..2 {
                let mut v = vec![];
                m.legal_moves(&s, ro, &mut v).unwrap();
                j.push(v[rng.below(v.len())]);
            }
            s = m.next_state(&s, &j).unwrap();
            states += 1;
        }
    }
    println!("{games} games, {:.0} states/s", states as f64 / t.elapsed().as_secs_f64());
}
