//! The coding tools (`read`, `write`, `edit`, `bash`, `grep`, `find`, `ls`) over a `Workspace`.
