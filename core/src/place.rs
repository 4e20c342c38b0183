//! Placement of keys on backends (issue 3).
