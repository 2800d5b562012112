//! The padding quick reference of "Which fix do I need?": for a column read of a 32-row tile
//! (lane `l` reads one column of row `l`), every element type and row width with its cost
//! unpadded, the least padding that makes it conflict-free and the least XOR swizzle that does;
//! the same for `float2` and `float4` views of a `float` tile; and the common compile-time check
//! `(COLS + PAD) * sizeof(T) % 128 != 0` against the model, beside the course's own check
//! (`kernels/column_check.cuh`), whose formula [`conflict_free_column`] repeats.

use bank_model::{Op, Request, WARP_SIZE, Width, swizzle::Swizzle};
use lesson_kit::{Report, Styled};

/// The tile's rows: one per lane.
const ROWS: u32 = WARP_SIZE as u32;

/// Row widths, in the tile's elements: powers of two from 8 to 128 (the lessons' tiles are 16,
/// 32 and 128 wide), and 34, a 32-wide tile with a halo of one element on each side.
pub const ROW_WIDTHS: [u32; 6] = [8, 16, 32, 34, 64, 128];

/// The largest padding searched, in the tile's elements.
pub const MAX_PADDING: u32 = 32;

/// The pitches the compile-time check is tried on, in elements.
pub const CHECKED_PITCHES: std::ops::RangeInclusive<u32> = 1..=160;

/// How a tile is read: its elements of `stored` bytes, read `access` bytes at a time (a vector
/// view when `access` is wider).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct View {
    pub stored: Width,
    pub access: Width,
}

impl View {
    pub fn scalar(width: Width) -> View {
        View { stored: width, access: width }
    }

    /// Tile elements per access (1, or the vector's length).
    pub fn vector(self) -> u32 {
        self.access.bytes() / self.stored.bytes()
    }

    pub fn name(self) -> String {
        match self.vector() {
            1 => self.stored.c_type().to_owned(),
            n => format!("{}{n} of {}", self.stored.c_type(), self.stored.c_type()),
        }
    }
}

/// Lane `l` reads access-column `column` of row `l` of a tile whose rows are `pitch` elements,
/// each element `e` stored at `swizzle(e)`.
fn column_request(view: View, pitch: u32, column: u32, swizzle: Swizzle) -> Request {
    let stored = view.stored.bytes();
    Request::bytes(Op::Load, view.access, |lane| swizzle.apply(lane * pitch + column * view.vector()) * stored)
        .expect("every access stays aligned")
}

/// The worst column's wavefronts and the ideal, over the `row / vector` columns of a row of `row`
/// elements laid out `pitch` apart.
pub fn worst_column(view: View, row: u32, pitch: u32, swizzle: Swizzle) -> (u32, u32) {
    (0..row / view.vector()).fold((0, 0), |(worst, _), column| {
        let analysis = column_request(view, pitch, column, swizzle).analyze();
        (worst.max(analysis.wavefronts), analysis.ideal)
    })
}

/// The least padding, in elements and a multiple of the vector's length (so that rows stay
/// aligned), that makes every column conflict-free; `Some(0)` when none is needed.
pub fn least_padding(view: View, row: u32) -> Option<u32> {
    (0..=MAX_PADDING).step_by(view.vector() as usize).find(|padding| {
        let (wavefronts, ideal) = worst_column(view, row, row + padding, Swizzle::IDENTITY);
        wavefronts == ideal
    })
}

/// The least `Swizzle<B, M, S>` (by B, then M, then S) that makes every column of the unpadded
/// tile conflict-free, permutes offsets only within the tile (its block of `2^(B+M+S)` elements
/// divides the tile), and moves whole vectors (`2^M` at least the vector's length).
pub fn least_swizzle(view: View, row: u32) -> Option<Swizzle> {
    let tile = ROWS * row;
    let min_base = view.vector().trailing_zeros();
    (1..=5)
        .flat_map(|bits| {
            (min_base..=min_base + 4).flat_map(move |base| (bits..=10).map(move |shift| (bits, base, shift)))
        })
        .filter(|&(bits, base, shift)| tile.is_multiple_of(1 << (bits + base + shift)))
        .filter_map(|(bits, base, shift)| Swizzle::new(bits, base, shift).ok())
        .find(|&swizzle| {
            let (wavefronts, ideal) = worst_column(view, row, row, swizzle);
            wavefronts == ideal
        })
}

/// One row of the quick reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub view: View,
    /// Row width in the tile's elements.
    pub row: u32,
    pub ideal: u32,
    pub unpadded: u32,
    pub padding: Option<u32>,
    pub swizzle: Option<Swizzle>,
}

pub fn entry(view: View, row: u32) -> Entry {
    let (unpadded, ideal) = worst_column(view, row, row, Swizzle::IDENTITY);
    Entry { view, row, ideal, unpadded, padding: least_padding(view, row), swizzle: least_swizzle(view, row) }
}

/// Every element type at every row width.
pub fn scalar_entries() -> Vec<Entry> {
    Width::ALL.into_iter().flat_map(|width| ROW_WIDTHS.map(|row| entry(View::scalar(width), row))).collect()
}

/// `float2` and `float4` views of a `float` tile, at every row width that holds whole vectors.
pub fn vector_entries() -> Vec<Entry> {
    [Width::W8, Width::W16]
        .into_iter()
        .flat_map(|access| {
            let view = View { stored: Width::W4, access };
            ROW_WIDTHS.into_iter().filter(move |row| row % view.vector() == 0).map(move |row| entry(view, row))
        })
        .collect()
}

fn cell(text: impl ToString) -> Styled {
    text.to_string().into()
}

fn entry_rows(entries: &[Entry]) -> Vec<Vec<Styled>> {
    entries
        .iter()
        .map(|e| {
            let c_type = e.view.stored.c_type();
            let padding = match e.padding {
                Some(0) => "none needed".to_owned(),
                Some(p) => format!("{p}: `{c_type} tile[32][{}]`", e.row + p),
                None => format!("none up to {MAX_PADDING}"),
            };
            let swizzle = match (e.unpadded == e.ideal, e.swizzle) {
                (true, _) => "none needed".to_owned(),
                (false, Some(swizzle)) => format!("`{swizzle}`"),
                (false, None) => "none".to_owned(),
            };
            vec![
                cell(e.view.name()),
                cell(e.row),
                cell(e.ideal),
                cell(e.unpadded),
                cell(padding),
                cell(if e.padding.is_some() { e.ideal.to_string() } else { "-".to_owned() }),
                cell(swizzle),
            ]
        })
        .collect()
}

const HEADER: [&str; 7] =
    ["type", "row (elements)", "ideal", "unpadded", "least padding (elements)", "padded", "least swizzle"];

/// The course's check, twin of `conflict_free_column_bytes` in `kernels/column_check.cuh`: the
/// two lines below are the header's, word for word (a test compares them), hence `%` as C++
/// writes it.
#[allow(clippy::manual_is_multiple_of)]
pub fn conflict_free_column(row_bytes: u32, element_bytes: u32) -> bool {
    let unit = if element_bytes > 4 { element_bytes } else { 4 };
    row_bytes < 4 || (row_bytes % unit == 0 && (row_bytes / unit) % 2 == 1)
}

/// The common check, `static_assert((COLS + PAD) * sizeof(T) % 128 != 0)`, as the notes write it.
#[allow(clippy::manual_is_multiple_of)]
pub fn common_check(row_bytes: u32) -> bool {
    row_bytes % 128 != 0
}

/// Whether every column of rows `pitch` elements of `width` bytes apart reads at the ideal.
pub fn model_conflict_free(width: Width, pitch: u32) -> bool {
    let (wavefronts, ideal) = worst_column(View::scalar(width), pitch, pitch, Swizzle::IDENTITY);
    wavefronts == ideal
}

/// How the common check and the course's check fare against the model for one element type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckTally {
    pub width: Width,
    pub conflict_free: Vec<u32>,
    /// Pitches the common check lets through though the model counts a conflict.
    pub passes_conflicted: Vec<u32>,
    /// Pitches the common check refuses though the model counts none.
    pub rejects_conflict_free: Vec<u32>,
    /// Pitches where the course's check disagrees with the model.
    pub course_check_wrong: Vec<u32>,
}

pub fn check_tally(width: Width) -> CheckTally {
    let mut tally = CheckTally {
        width,
        conflict_free: vec![],
        passes_conflicted: vec![],
        rejects_conflict_free: vec![],
        course_check_wrong: vec![],
    };
    for pitch in CHECKED_PITCHES {
        let good = model_conflict_free(width, pitch);
        let row_bytes = pitch * width.bytes();
        if good {
            tally.conflict_free.push(pitch);
        }
        match (common_check(row_bytes), good) {
            (true, false) => tally.passes_conflicted.push(pitch),
            (false, true) => tally.rejects_conflict_free.push(pitch),
            _ => {}
        }
        if conflict_free_column(row_bytes, width.bytes()) != good {
            tally.course_check_wrong.push(pitch);
        }
    }
    tally
}

/// A few of `pitches`, the first from 32 on (a tile's usual width), and how many more.
fn examples(pitches: &[u32]) -> String {
    if pitches.is_empty() {
        return "none".to_owned();
    }
    let shown: Vec<String> = pitches.iter().filter(|&&p| p >= 32).take(4).map(|p| format!("`[{p}]`")).collect();
    let more = pitches.len() - shown.len();
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    format!("{}{more}", shown.join(", "))
}

/// Pitches of the two-row table, in floats.
pub const TWO_ROW_PITCHES: std::ops::RangeInclusive<u32> = 32..=50;

/// A warp of a 16 x 16 block over a `float` tile of `pitch` floats per row: lane `l` reads
/// `tile[l / 16][c + l % 16]`; the worst of the offsets `c` of 0 to 15 (a stencil's taps).
pub fn two_rows(pitch: u32) -> (u32, u32) {
    (0..16).fold((0, 0), |(worst, _), c| {
        let analysis = Request::elements(Op::Load, Width::W4, |lane| lane / 16 * pitch + c + lane % 16).analyze();
        (worst.max(analysis.wavefronts), analysis.ideal)
    })
}

fn quick_reference_page() -> String {
    let mut report = Report::default();
    report.text(format!(
        "A column read of a tile of {ROWS} rows: lane l reads one column of row l. Wavefronts are the worst \
         column's, from the model. Padding is the least number of elements added to each row, searched up to \
         {MAX_PADDING}; the swizzle is the least CuTe `Swizzle<B, M, S>` (by B, then M, then S) on the \
         unpadded tile, applied to element offsets."
    ));
    report.table(HEADER, entry_rows(&scalar_entries()));
    report.heading("Vector views of a float tile");
    report.text(
        "The same for a `float` tile read as `float2` or `float4` columns. Row widths and padding are in floats; \
         the padding is a whole number of vectors, so that every row stays aligned, and the swizzle's M keeps \
         each vector whole.",
    );
    report.table(HEADER, entry_rows(&vector_entries()));
    report.heading("A warp over two rows");
    report.text(
        "A 16 x 16 block on a `float` tile: a warp is two rows of 16 threads, and lane l reads \
         `tile[l / 16][c + l % 16]`, the worst offset c of 0 to 15. Here the pitch does not decide a column's \
         banks but where the second row starts.",
    );
    let rows = TWO_ROW_PITCHES
        .map(|pitch| {
            let (wavefronts, ideal) = two_rows(pitch);
            vec![cell(format!("`float tile[..][{pitch}]`")), cell(pitch % 32), cell(ideal), cell(wavefronts)]
        })
        .collect();
    report.table(["tile", "pitch mod 32", "ideal", "wavefronts"], rows);
    report.render_markdown()
}

fn check_page() -> String {
    let mut report = Report::default();
    report.text(format!(
        "For each element type and each row of {} to {} elements (COLS + PAD): how many layouts the model \
         finds conflict-free for a column read (every column of the row at the ideal), where \
         `(COLS + PAD) * sizeof(T) % 128 != 0` passes a conflicted layout or refuses a conflict-free one, and \
         where the course's `conflict_free_column<T>` disagrees with the model.",
        CHECKED_PITCHES.start(),
        CHECKED_PITCHES.end()
    ));
    let rows = Width::ALL
        .into_iter()
        .map(|width| {
            let t = check_tally(width);
            vec![
                cell(width.c_type()),
                cell(t.conflict_free.len()),
                cell(format!("{}: {}", t.passes_conflicted.len(), examples(&t.passes_conflicted))),
                cell(t.rejects_conflict_free.len()),
                cell(t.course_check_wrong.len()),
            ]
        })
        .collect();
    report.table(
        [
            "type",
            "conflict-free rows",
            "% 128 check passes a conflict",
            "refuses a conflict-free row",
            "conflict_free_column wrong",
        ],
        rows,
    );
    report.render_markdown()
}

/// The generated pages: the quick reference, and the compile-time checks against the model.
pub fn pages() -> Vec<(String, String)> {
    vec![
        ("padding-quick-reference.md".to_owned(), quick_reference_page()),
        ("column-check.md".to_owned(), check_page()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(entries: &[Entry], name: &str, row: u32) -> Entry {
        entries.iter().find(|e| e.view.name() == name && e.row == row).unwrap().clone()
    }

    #[test]
    fn the_quick_reference_says_what_chapter_2_measured() {
        let scalar = scalar_entries();
        // float and double 32 wide: one element of padding (double: 2 per half-warp is ideal).
        let float = find(&scalar, "float", 32);
        assert_eq!((float.unpadded, float.ideal, float.padding), (32, 1, Some(1)));
        assert_eq!(float.swizzle, Some(Swizzle::new(5, 0, 5).unwrap()), "chapter 3's tile[r][c ^ r]");
        let double = find(&scalar, "double", 32);
        assert_eq!((double.unpadded, double.ideal, double.padding), (32, 2, Some(1)));
        // char and half: a whole odd number of words, so 4 and 2 elements.
        let char32 = find(&scalar, "char", 32);
        assert_eq!((char32.unpadded, char32.padding), (8, Some(4)));
        assert_eq!(find(&scalar, "char", 128).padding, Some(4), "char tile[32][132], not [129]");
        assert_eq!(find(&scalar, "half", 32).padding, Some(2));
        assert_eq!(find(&scalar, "float4", 32).padding, Some(1));
        // An odd-unit row needs nothing; a 34-wide float row is 2-way, one float fixes it, and
        // no XOR swizzle stays inside a tile whose size is not a power of two times a small block.
        let halo = find(&scalar, "float", 34);
        assert_eq!((halo.unpadded, halo.padding), (2, Some(1)));
        // Every entry that is padded is conflict-free with its padding, by the model.
        for e in scalar.iter().chain(&vector_entries()) {
            if let Some(p) = e.padding {
                assert_eq!(worst_column(e.view, e.row, e.row + p, Swizzle::IDENTITY).0, e.ideal, "{e:?}");
            }
            if let Some(s) = e.swizzle {
                assert_eq!(worst_column(e.view, e.row, e.row, s).0, e.ideal, "{e:?}");
            }
        }
    }

    #[test]
    fn a_warp_over_two_rows_needs_a_pitch_of_16_mod_32() {
        for pitch in TWO_ROW_PITCHES {
            let expected = if pitch % 32 == 16 { 1 } else { 2 };
            assert_eq!(two_rows(pitch), (expected, 1), "pitch {pitch}");
        }
    }

    #[test]
    fn vector_views_need_an_odd_number_of_vectors() {
        let vectors = vector_entries();
        let float4 = find(&vectors, "float4 of float", 32);
        assert_eq!((float4.unpadded, float4.ideal, float4.padding), (32, 4, Some(4)), "float tile[32][36]");
        assert_eq!(float4.swizzle, Some(Swizzle::new(3, 2, 3).unwrap()), "chapter 9's swizzle");
        let float2 = find(&vectors, "float2 of float", 32);
        assert_eq!((float2.unpadded, float2.ideal, float2.padding), (32, 2, Some(2)), "float tile[32][34]");
    }

    #[test]
    fn the_common_check_passes_conflicts_and_the_courses_check_is_exact() {
        for width in Width::ALL {
            let tally = check_tally(width);
            assert!(tally.course_check_wrong.is_empty(), "{width}: {:?}", tally.course_check_wrong);
            // A row of a multiple of 128 bytes is an even number of units: never conflict-free.
            assert!(tally.rejects_conflict_free.is_empty(), "{width}: {:?}", tally.rejects_conflict_free);
        }
        // The cases chapter 2 measured: char [129] and half [33] pass the check and conflict.
        assert!(check_tally(Width::W1).passes_conflicted.contains(&129));
        assert!(check_tally(Width::W2).passes_conflicted.contains(&33));
        assert!(check_tally(Width::W4).passes_conflicted.contains(&34));
    }

    /// The Rust twin and the header state the same formula: the two lines of
    /// `conflict_free_column` appear in `kernels/column_check.cuh` as they are written here
    /// (C++'s conditional in place of Rust's `if`).
    #[test]
    fn the_header_states_the_same_formula() {
        let header = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels/column_check.cuh"),
        )
        .unwrap();
        let formula = "row_bytes < 4 || (row_bytes % unit == 0 && (row_bytes / unit) % 2 == 1)";
        assert!(include_str!("quick_reference.rs").contains(&format!("    {formula}\n}}")));
        assert!(header.contains(&format!("return {formula};")), "the header's formula differs");
        assert!(
            include_str!("quick_reference.rs")
                .contains("let unit = if element_bytes > 4 { element_bytes } else { 4 };")
        );
        assert!(header.contains("const unsigned unit = element_bytes > 4 ? element_bytes : 4;"));
        assert!(header.contains("ANCHOR: conflict_free_column") && header.contains("ANCHOR_END: conflict_free_column"));
    }
}
