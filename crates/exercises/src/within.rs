//! Every place a learner's part gives an element must lie inside the tile the part declares. The
//! GPU does not stop every place outside it: on the H100, a shared store a few words below a
//! block's first shared variable neither faults nor changes the output (one past the tile's end
//! faults), so a padded layout shifted below its tile would pass for an unpadded
//! one, and take its shared-memory points. So the check's correctness launches run the part
//! compiled with a recorder: the part's function renamed, and a function of the grader's in its
//! place that calls it and, at the first place outside the tile, in the exercise's own kernel,
//! for the very threads and arguments that kernel uses, writes the place to the host's memory and
//! stops the kernel with a trap. Nothing the part does can undo a trap, whatever it writes: the
//! verdict holds even where a part reaches the record. Every other build of the part (timed,
//! profiled) is renamed and wrapped the same way, the wrapper only passing the place on, so that
//! nothing the part can see (`#ifdef slot`, the macro's spelling) tells it which build it is in.

use cuda_kernels::{Gpu, GpuError, HostWords, TextModule};
use serde::Deserialize;

/// The recorder's `__device__` count of the places outside the tile: the first to count writes
/// the record (a launch writes it: no memory of the part's).
pub const RECORD: &str = "bcm_places_outside";
/// The recorder's `__device__` pointer to the record in the host's memory ([`Within::record`]):
/// whether it is written, then the first place outside, the tile's size, its number of
/// arguments and up to four arguments.
pub(crate) const RECORD_AT: &str = "bcm_record_at";
/// What the wrapper puts before the part's function's name, the grader's function taking its.
pub const RENAMED: &str = "bcm_part_";
const RECORD_WORDS: usize = 8;
const ARGUMENTS_KEPT: usize = 4;

/// The part's function that places elements, and the tile it must keep them in
/// (`[exercise.within]` in `info.toml`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Within {
    /// The function's name: `slot`.
    pub function: String,
    /// How many units of the tile an element takes from its place on (1 if not given: a 16-byte
    /// chunk of halves takes 8).
    #[serde(default = "one")]
    pub span: u32,
    /// The tile's size in those units: an expression of the part's names, `TILE_WORDS`.
    pub size: String,
}

const fn one() -> u32 {
    1
}

impl Within {
    /// `Err` naming what is wrong with this entry of exercise `id`.
    pub fn check(&self, id: &str) -> Result<(), String> {
        let identifier = |name: &str| {
            name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        match (identifier(&self.function), self.span) {
            (true, 1..) => Ok(()),
            _ => Err(format!(
                "exercise {id}: [exercise.within]: `function` names the part's function, and `span` is 1 or more"
            )),
        }
    }

    /// What goes before the part: the part's function renamed, the grader's wrapper taking its
    /// name after the part ([`Within::code`]).
    pub fn before_part(&self) -> String {
        format!("#define {} {RENAMED}{}\n", self.function, self.function)
    }

    /// The grader's code after the part ([`crate::after_part`]): a wrapper, under the part's
    /// function's name, that passes the place on, and if `record`, records it.
    /// - The place must be an integer (a class could convert one way for the kernel, another for
    ///   the recorder); it is checked as the kernel takes it (`+`), through a copy the compiler
    ///   cannot reason about, and passed on by value, of the type the part gave it. The wrapper is
    ///   the part's function to whatever asks (`noexcept`, the type).
    /// - The tile's size is the kernel's: the value the code after the part reads, made a number
    ///   once before this code ([`crate::after_part`]: a size computed with the part's function
    ///   calls it there, before the wrapper exists, for the recorder and the kernel alike; overloads
    ///   for an rvalue and an lvalue once gave the recorder 2^31 - 1 beside a 1024-word tile), read
    ///   as an array's length, as the tile's declaration reads it. The wrapper is `constexpr` where
    ///   the part's function is, and nothing is recorded while the compiler evaluates a call.
    pub fn code(&self, record: bool) -> String {
        let (function, size, span) = (&self.function, &self.size, self.span);
        let renamed = format!("{RENAMED}{function}");
        // What the wrapper answers of itself, as the part's function would: the place's type, and
        // whether a call can throw.
        let place_type = format!("typename bcm_bare<decltype({renamed}(bcm_a...))>::type");
        let answers = format!("noexcept(noexcept({renamed}(bcm_a...))) -> {place_type}");
        // The place the recorder checks is one the compiler cannot reason about: from a part's
        // undefined behaviour (a table read past its end, every entry in it a place in the tile) it
        // concluded that no place is outside the tile, and folded the check away.
        let opaque = match record {
            false => "",
            true => {
                "__device__ __forceinline__ unsigned bcm_opaque(unsigned bcm_v) { asm volatile(\"\" : \"+r\"(bcm_v)); return bcm_v; }\n"
            }
        };
        let recorder = match record {
            false => String::new(),
            true => {
                let kept: String = (0..ARGUMENTS_KEPT)
                    .map(|i| format!("            bcm_record[{}] = bcm_args[{i}];\n", 4 + i))
                    .collect();
                // (Not a `const` initialised with `__builtin_is_constant_evaluated()`, which the
                // compiler evaluates as a constant: always 0.)
                // A place of 2^31 or more is one below the tile, whatever size the part declares.
                // The first to count writes the record, then all stop; the others wait a while
                // for the record first (a trap ends every thread's launch).
                format!(
                    "    unsigned bcm_checked = 0u;\n\
                     \x20   if (!__builtin_is_constant_evaluated()) bcm_checked = bcm_opaque((unsigned)(bcm_place));\n\
                     \x20   if (!__builtin_is_constant_evaluated() && (bcm_checked >= 0x80000000u \
                     || bcm_tile_size < {span}u || bcm_checked > bcm_tile_size - {span}u)) {{\n\
                     \x20       volatile unsigned *bcm_record = {RECORD_AT};\n\
                     \x20       if (atomicAdd(&{RECORD}, 1u) == 0u) {{\n\
                     \x20           const unsigned bcm_args[] = {{(unsigned)(bcm_a)..., 0u, 0u, 0u, 0u}};\n\
                     \x20           bcm_record[1] = bcm_checked;\n\
                     \x20           bcm_record[2] = bcm_tile_size;\n\
                     \x20           bcm_record[3] = sizeof...(bcm_a);\n\
                     {kept}\
                     \x20           __threadfence_system();\n\
                     \x20           bcm_record[0] = 1u;\n\
                     \x20           __threadfence_system();\n\
                     \x20       }}\n\
                     \x20       for (unsigned bcm_wait = 0u; bcm_wait < 65536u && bcm_record[0] == 0u; ++bcm_wait) {{}}\n\
                     \x20       __trap();\n\
                     \x20   }}\n"
                )
            }
        };
        format!(
            "#undef {function}\n#undef {renamed}\n\
             __device__ unsigned {RECORD};\n\
             __device__ unsigned *{RECORD_AT};\n\
             {opaque}\
             [[maybe_unused]] constexpr unsigned bcm_tile_size = (unsigned)sizeof(char[{size}]);\n\
             template <class... bcm_A>\n\
             __device__ __forceinline__ constexpr auto {function}(bcm_A... bcm_a) {answers} {{\n\
             \x20   static_assert(bcm_integer<{place_type}>::value, \
             \"{function} must give its place as an integer (int, unsigned, ...): a class could convert one \
             way for the kernel and another for the check\");\n\
             \x20   const auto bcm_place = +{renamed}(bcm_a...);\n\
             {recorder}\
             \x20   return bcm_place;\n\
             }}\n"
        )
    }

    /// The record of `module` (compiled from [`crate::after_part`]'s text), made and pointed to:
    /// a recording build's is read with [`Within::outside`], whatever state the GPU is in after.
    /// Every build's is pointed to, the timed and profiled builds' too, which record nothing: a
    /// part that reads past the end of a table of its own may reach the grader's variables, and
    /// must find them alike in every build (a null pointer told the recorded build apart).
    pub fn record(gpu: &Gpu, module: &TextModule) -> Result<HostWords, GpuError> {
        let record = gpu.host_words(RECORD_WORDS)?;
        module.set_address(gpu, RECORD_AT, record.device_address())?;
        Ok(record)
    }

    /// What the recorder has written in `record` in the launches so far: the first place
    /// outside the tile, if any (its launch trapped).
    pub fn outside(&self, record: &HostWords) -> Option<String> {
        self.describe(&record.read())
    }

    /// The recorder's words, in words.
    fn describe(&self, record: &[u32]) -> Option<String> {
        let &[written, place, size, arguments, ref kept @ ..] = record else { return None };
        if written == 0 {
            return None;
        }
        let shown = kept.iter().take((arguments as usize).min(ARGUMENTS_KEPT)).map(u32::to_string);
        let more = if arguments as usize > ARGUMENTS_KEPT { ", ..." } else { "" };
        let arguments = format!("{}{more}", shown.collect::<Vec<_>>().join(", "));
        let signed = match place as i32 {
            negative if negative < 0 => format!(" ({negative} as a signed number)"),
            _ => String::new(),
        };
        let allowed = match (self.span, size.checked_sub(self.span)) {
            (_, None) => format!("the tile holds {size}, less than one element"),
            (1, Some(last)) => format!("its places are 0 to {last}"),
            (span, Some(last)) => format!("an element takes {span}, so its places are 0 to {last}"),
        };
        Some(format!(
            "{}({arguments}) is {place}{signed}, outside the tile (the first such call at the check size, where the \
             check stopped the kernel): {} is {size} here, and {allowed}. Memory below or past the tile is not the \
             tile's, even where the GPU lets a store there pass",
            self.function, self.size
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learner_file::LearnerFile;

    fn transpose() -> Within {
        Within { function: "slot".into(), span: 1, size: "TILE_WORDS".into() }
    }

    #[test]
    fn the_recorder_takes_the_functions_name_after_the_part_and_keeps_the_line_numbers() {
        let file = LearnerFile {
            text: "#define TILE 32u\n// ---- EDIT BELOW ----\n#define TILE_WORDS (TILE * TILE)\n\
                   unsigned slot(unsigned r, unsigned c) { return r * TILE + c; }\n// ---- EDIT ABOVE ----\n\
                   void k() { tile[slot(1, 2)] = 0; }\n"
                .into(),
            region: (3, 4),
            ..Default::default()
        };
        let text = crate::after_part::compiled_text(Some(&transpose()), &file, true).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..4],
            ["#define TILE 32u", "// ---- EDIT BELOW ----", "#define slot bcm_part_slot", "#line 3"]
        );
        assert_eq!(lines[4..6], file.text.lines().collect::<Vec<_>>()[2..4], "the part as it was");
        let recorder = lines.iter().position(|l| l.contains("auto slot(bcm_A... bcm_a)")).expect("the recorder");
        assert!(lines[..recorder].contains(&"#undef if"));
        assert!(text.contains("const auto bcm_place = +bcm_part_slot(bcm_a...);"), "{text}");
        // The wrapper answers what the part's function would (a size computed with `noexcept` or
        // the type of a place is the recorder's and the kernel's alike).
        let signature =
            "noexcept(noexcept(bcm_part_slot(bcm_a...))) -> typename bcm_bare<decltype(bcm_part_slot(bcm_a...))>::type";
        assert!(lines[recorder].ends_with(&format!("{signature} {{")), "{}", lines[recorder]);
        // The size is the value the kernel's tile is declared with, read as an array's length.
        let size = lines.iter().position(|l| {
            *l == "[[maybe_unused]] constexpr unsigned bcm_tile_size = (unsigned)sizeof(char[TILE_WORDS]);"
        });
        let undone = lines.iter().position(|l| *l == "#undef slot");
        assert!(undone < size && size < Some(recorder), "the size before the wrapper, the part's name undone");
        assert!(text.contains("> bcm_tile_size - 1u))"), "{text}");
        // The record goes to the host's memory, and the kernel stops: nothing after can undo it.
        let outside = text.find("volatile unsigned *bcm_record = bcm_record_at;").expect("the record");
        let written = text.find("bcm_record[0] = 1u;").expect("written last");
        let trap = text.find("__trap();").expect("the trap");
        assert!(outside < written && written < trap, "{text}");
        assert_eq!(
            lines[lines.len() - 3..],
            ["#line 5", "// ---- EDIT ABOVE ----", "void k() { tile[slot(1, 2)] = 0; }"]
        );
        // Unrecorded, the same but the recording: the part sees the same either way.
        let passed_on = crate::after_part::compiled_text(Some(&transpose()), &file, false).into_owned();
        assert!(
            !passed_on.contains("atomicAdd(&")
                && !passed_on.contains("__trap()")
                && !passed_on.contains("bcm_opaque(")
                && passed_on.contains("const auto bcm_place = +bcm_part_slot(bcm_a...);")
        );
        // Recorded, the place checked is one the compiler cannot reason about.
        assert!(text.contains("bcm_checked = bcm_opaque((unsigned)(bcm_place));"), "{text}");
        assert!(text.contains("asm volatile(\"\" : \"+r\"(bcm_v))"), "{text}");
        let part = |text: &str| text.lines().take(6).map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(part(&passed_on), part(&text));
    }

    #[test]
    fn a_place_below_or_past_the_tile_is_named_and_none_is_not() {
        assert_eq!(transpose().describe(&[0, 0, 0, 0, 0, 0, 0, 0]), None);
        let below = transpose().describe(&[1, -31i32 as u32, 1024, 2, 0, 0, 0, 0]).unwrap();
        assert!(
            below.starts_with(
                "slot(0, 0) is 4294967265 (-31 as a signed number), outside the tile (the first such call at the \
                 check size, where the check stopped the kernel): TILE_WORDS is 1024 here, and its places are 0 to 1023."
            ),
            "{below}"
        );
        let past = transpose().describe(&[1, 1054, 1024, 2, 31, 31, 0, 0]).unwrap();
        assert!(past.starts_with("slot(31, 31) is 1054, outside the tile (the first such call"), "{past}");
        let chunks = Within { span: 8, ..transpose() };
        assert!(chunks.describe(&[1, 4090, 4096, 5, 1, 2, 3, 4]).unwrap().starts_with("slot(1, 2, 3, 4, ...) is 4090"));
        assert!(
            chunks.describe(&[1, 0, 4, 1, 0, 0, 0, 0]).unwrap().contains("the tile holds 4, less than one element")
        );
    }

    #[test]
    fn a_malformed_entry_is_named() {
        assert_eq!(transpose().check("x"), Ok(()));
        for bad in [Within { span: 0, ..transpose() }, Within { function: "a b".into(), ..transpose() }] {
            assert!(bad.check("x").unwrap_err().starts_with("exercise x: [exercise.within]: "), "{bad:?}");
        }
    }
}
