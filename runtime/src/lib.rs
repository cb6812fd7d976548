//! Propel runtime.
