//! One module per area.
