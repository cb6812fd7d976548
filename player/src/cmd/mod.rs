//! One module per subcommand.

pub mod analyse;
pub mod bench;
pub mod check;
pub mod compare;
pub mod compile;
pub mod corpus;
pub mod perft;
pub mod play_match;
pub mod playouts;
pub mod report;
pub mod search;
pub mod serve;
pub mod trace;

use propel_runtime::Goal;
use serde_json::Value;

/// A goal as the trace format writes it: an integer, `null` when the rules
/// give none, the sorted list when they give several.
pub fn goal_json(g: &Goal) -> Value {
    match g {
        Goal::Value(v) => Value::from(*v),
        Goal::Undefined => Value::Null,
        Goal::Several(v) => Value::from(v.clone()),
    }
}
