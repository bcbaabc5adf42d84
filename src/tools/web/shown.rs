//! A fetched text as the model sees it: cut to `read`'s limits (2000 lines or 50 KB), the whole
//! text spilled to a temp file when it was cut, as `bash` spills its output.

use std::path::{Path, PathBuf};

use crate::tools::truncate::{
    DEFAULT_MAX_BYTES, Limits, TruncatedBy, format_size, head_bytes, truncate_head,
};

/// The shown part of a text and what was left out.
pub struct Shown {
    pub text: String,
    /// The notice after the text (`[Showing …]`), when it was cut.
    pub notice: Option<String>,
    /// Where the whole text is, when it was cut and could be written.
    pub full_path: Option<PathBuf>,
}

/// Cuts `text` to the limits; when cut, writes it whole into `spill_dir` (`name_hint` is the
/// file's extension: `md`, `txt`).
pub fn show(text: &str, spill_dir: &Path, extension: &str) -> Shown {
    let cut = truncate_head(text, Limits::default());
    if !cut.truncated {
        return Shown {
            text: cut.content,
            notice: None,
            full_path: None,
        };
    }
    let (full_path, full) = match spill(text, spill_dir, extension) {
        Ok(path) => {
            let shown = path.display().to_string();
            (Some(path), shown)
        }
        Err(e) => (None, format!("unavailable ({e})")),
    };
    let read_on = |from: usize| match &full_path {
        Some(path) => format!(
            "Full text: {full}; read on with bash, e.g. sed -n '{from},{}p' {}",
            from + 1999,
            path.display()
        ),
        None => format!("Full text: {full}"),
    };
    let (text, notice) = if cut.first_line_exceeds_limit {
        let head = head_bytes(
            text.split('\n').next().unwrap_or_default(),
            DEFAULT_MAX_BYTES,
        );
        let notice = format!(
            "[Showing the first {} of line 1 (the line is {}). {}]",
            format_size(head.len()),
            format_size(text.split('\n').next().unwrap_or_default().len()),
            read_on(1)
        );
        (head.to_owned(), notice)
    } else {
        let limit = match cut.truncated_by {
            Some(TruncatedBy::Bytes) => format!(" ({} limit)", format_size(DEFAULT_MAX_BYTES)),
            _ => String::new(),
        };
        let notice = format!(
            "[Showing lines 1-{} of {}{limit}. {}]",
            cut.output_lines,
            cut.total_lines,
            read_on(cut.output_lines + 1)
        );
        (cut.content, notice)
    };
    Shown {
        text,
        notice: Some(notice),
        full_path,
    }
}

/// Writes `text` to a new file only the user can read (a page may be private to them).
fn spill(text: &str, dir: &Path, extension: &str) -> std::io::Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let id = uuid::Uuid::new_v4().simple().to_string();
    let path = dir.join(format!("agent-lsp-web-{}.{extension}", &id[..16]));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    file.write_all(text.as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_shown_whole() {
        let dir = tempfile::tempdir().unwrap();
        let shown = show("a\nb", dir.path(), "txt");
        assert_eq!(shown.text, "a\nb");
        assert!(shown.notice.is_none() && shown.full_path.is_none());
    }

    #[test]
    fn long_text_is_cut_and_spilled_whole() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
        let shown = show(&text, dir.path(), "md");
        let path = shown.full_path.unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(shown.text.ends_with("line 2000"));
        let notice = shown.notice.unwrap();
        assert!(
            notice.starts_with("[Showing lines 1-2000 of 3001. Full text: "),
            "{notice}"
        );
        assert!(notice.contains("sed -n '2001,4000p'"), "{notice}");
    }

    #[test]
    fn one_long_line_shows_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let text = "x".repeat(100_000);
        let shown = show(&text, dir.path(), "txt");
        assert_eq!(shown.text.len(), DEFAULT_MAX_BYTES);
        assert!(
            shown
                .notice
                .unwrap()
                .starts_with("[Showing the first 50.0KB of line 1 (the line is 97.7KB)."),
        );
    }
}
