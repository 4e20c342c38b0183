//! Shared bench helpers.
