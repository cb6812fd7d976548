//! One module per subcommand.

pub mod analyse;
pub mod bench;
pub mod check;
pub mod compare;
pub mod compile;
pub mod corpus;
pub mod duel;
pub mod perft;
pub mod play_match;
pub mod playouts;
pub mod report;
pub mod search;
pub mod serve;
pub mod trace;
