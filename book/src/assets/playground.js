// The bank playground. Every answer comes from the course's bank model, compiled from Rust to
// WebAssembly (crates/bank-playground); this script only builds the form, sends the reader's
// input to the model as JSON and draws the reply.
(function () {
    "use strict";

    const playgrounds = Array.from(document.querySelectorAll(".bank-playground"));
    if (playgrounds.length === 0) {
        return;
    }
    const scriptUrl = document.currentScript.src;

    // The module's bytes come as a script (base64), which loads from file:// as well as http.
    function loadModel() {
        return new Promise(function (resolve, reject) {
            const script = document.createElement("script");
            script.src = new URL("bank-playground-wasm.js", scriptUrl).href;
            script.onload = function () { resolve(globalThis.bankPlaygroundWasm); };
            script.onerror = function () {
                reject(new Error("the playground's model (bank-playground-wasm.js) is missing: build the book with `cargo xtask book`"));
            };
            document.head.appendChild(script);
        }).then(function (base64) {
            const bytes = Uint8Array.from(atob(base64), function (c) { return c.charCodeAt(0); });
            return WebAssembly.instantiate(bytes, {});
        }).then(function (module) {
            return module.instance.exports;
        });
    }

    // One question in, one reply out, as UTF-8 JSON through the module's memory.
    function ask(model, question) {
        const input = new TextEncoder().encode(JSON.stringify(question));
        const ptr = model.playground_alloc(input.length);
        new Uint8Array(model.memory.buffer, ptr, input.length).set(input);
        const length = model.playground_reply(ptr, input.length);
        model.playground_free(ptr, input.length);
        const reply = new Uint8Array(model.memory.buffer, model.playground_reply_ptr(), length);
        return JSON.parse(new TextDecoder().decode(reply));
    }

    function make(tag, attributes, children) {
        const node = document.createElement(tag);
        Object.entries(attributes || {}).forEach(function ([name, value]) {
            if (name === "text") {
                node.textContent = value;
            } else {
                node.setAttribute(name, value);
            }
        });
        (children || []).forEach(function (child) { node.appendChild(child); });
        return node;
    }

    function labelled(text, control) {
        return make("label", {}, [make("span", { text: text }), control]);
    }

    function select(className, options, chosen) {
        const node = make("select", { class: className });
        options.forEach(function ([value, text]) {
            node.appendChild(make("option", { value: value, text: text }));
        });
        node.value = chosen;
        return node;
    }

    function textInput(className, value, size) {
        return make("input", { class: className, type: "text", value: value, size: String(size), spellcheck: "false", autocomplete: "off" });
    }

    // Text, not type="number": the model reads exactly what was typed and says what is wrong with it.
    function numberInput(className, value) {
        return make("input", { class: className, type: "text", inputmode: "numeric", value: value, size: "4", spellcheck: "false", autocomplete: "off" });
    }

    function build(root) {
        const data = root.dataset;
        const fields = {
            op: select("bp-op", [["ld", "load"], ["st", "store"], ["ldmatrix.x1", "ldmatrix.x1"], ["ldmatrix.x2", "ldmatrix.x2"], ["ldmatrix.x4", "ldmatrix.x4"], ["ldmatrix.x4.trans", "ldmatrix.x4.trans"], ["stmatrix.x4", "stmatrix.x4"], ["cp.async", "cp.async (shared side)"]], data.op || "ld"),
            width: select("bp-width", [["1", "1 B (char)"], ["2", "2 B (half)"], ["4", "4 B (float)"], ["8", "8 B (double)"], ["16", "16 B (float4)"]], data.width || "4"),
            mode: select("bp-mode", [["index", "lane index"], ["tile", "tile"]], data.mode || "index"),
            index: textInput("bp-index", data.index || "lane", 28),
            rows: numberInput("bp-rows", data.rows || "32"),
            columns: numberInput("bp-columns", data.columns || "32"),
            padding: numberInput("bp-padding", data.padding || "0"),
            swizzle: select("bp-swizzle", [["none", "none"], ["xor", "XOR: column ^ row"], ["cute", "CuTe Swizzle<B, M, S>"]], data.swizzle || "none"),
            cute: textInput("bp-cute", data.cute || "3, 0, 3", 8),
            row: textInput("bp-row", data.row || "lane", 14),
            column: textInput("bp-column", data.column || "0", 14),
        };
        const indexFields = make("div", { class: "bp-fields bp-index-fields" }, [labelled("element index =", fields.index)]);
        const tileFields = make("div", { class: "bp-fields bp-tile-fields" }, [
            labelled("rows", fields.rows),
            labelled("columns", fields.columns),
            labelled("padding", fields.padding),
            labelled("swizzle", fields.swizzle),
            labelled("B, M, S =", fields.cute),
            labelled("row =", fields.row),
            labelled("column =", fields.column),
        ]);
        const error = make("p", { class: "bp-error", role: "alert" });
        const output = make("div", { class: "bp-output", "aria-live": "polite" });
        root.replaceChildren(
            make("div", { class: "bp-fields" }, [labelled("access", fields.op), labelled("width", fields.width), labelled("lanes by", fields.mode)]),
            indexFields,
            tileFields,
            error,
            output
        );
        root.dataset.state = "loading";
        return { root: root, fields: fields, indexFields: indexFields, tileFields: tileFields, error: error, output: output };
    }

    function question(fields) {
        const common = { op: fields.op.value, width: Number(fields.width.value) };
        if (fields.mode.value === "index") {
            return Object.assign(common, { mode: "index", index: fields.index.value });
        }
        return Object.assign(common, {
            mode: "tile",
            tile: { rows: fields.rows.value, columns: fields.columns.value, padding: fields.padding.value, swizzle: fields.swizzle.value, cute: fields.cute.value },
            row: fields.row.value,
            column: fields.column.value,
        });
    }

    function drawAnswer(output, answer) {
        const headline = make("p", { class: "bp-headline" }, [
            make("span", { class: "bp-wavefronts", text: String(answer.wavefronts) }),
            make("span", { text: answer.wavefronts === 1 ? " wavefront" : " wavefronts" }),
            make("span", { class: "bp-detail", text: "ideal " + answer.ideal + ", conflict degree " + answer.conflict_degree }),
        ]);
        const parts = [headline, make("p", { class: "bp-summary", text: answer.summary })];
        const banks = make("div", { class: "bp-banks", role: "list", "aria-label": "the 32 banks" });
        answer.banks.forEach(function (bank) {
            const state = bank.lanes.length === 0 ? "bp-idle" : bank.conflict ? "bp-conflict" : "bp-free";
            const words = bank.words.length === 0 ? "-" : bank.words.length + (bank.words.length === 1 ? " word" : " words");
            const cell = make("div", { class: "bp-bank " + state + (bank.shared ? " bp-shared" : ""), role: "listitem" }, [
                make("span", { class: "bp-bank-number", text: "bank " + bank.bank }),
                make("span", { class: "bp-bank-words", text: words }),
                make("span", { class: "bp-bank-lanes", text: bank.lanes.length ? "lanes " + bank.lane_ranges : "" }),
            ]);
            if (bank.words.length > 0) {
                cell.title = "words " + bank.words.join(", ") + "; at most " + bank.most_words_in_one_pass + " in one pass" + (bank.shared ? "; some lanes share a word" : "");
            }
            banks.appendChild(cell);
        });
        parts.push(banks);
        const lanes = make("div", { class: "bp-lanes", role: "list", "aria-label": "each lane's banks" });
        answer.lanes.forEach(function (lane) {
            const where = lane.address === null ? "inactive" : "bank " + lane.banks.join(",");
            const cell = make("div", { class: "bp-lane" + (lane.shared ? " bp-shared" : ""), role: "listitem" }, [
                make("span", { class: "bp-lane-number", text: "lane " + lane.lane }),
                make("span", { class: "bp-lane-bank", text: where }),
            ]);
            if (lane.address !== null) {
                cell.title = "byte address " + lane.address + (lane.shared ? "; its words are also another lane's" : "");
            }
            lanes.appendChild(cell);
        });
        parts.push(make("p", { class: "bp-legend", text: "Red banks serve more than one word in a pass (a conflict); outlined banks and lanes share a word (broadcast for loads)." }));
        parts.push(lanes);
        output.replaceChildren.apply(output, parts);
    }

    function update(model, view) {
        const tile = view.fields.mode.value === "tile";
        view.indexFields.hidden = tile;
        view.tileFields.hidden = !tile;
        view.fields.cute.parentNode.hidden = view.fields.swizzle.value !== "cute";
        const reply = ask(model, question(view.fields));
        if (reply.error !== undefined) {
            view.error.textContent = reply.error;
            view.output.classList.add("bp-stale");
            view.root.dataset.state = "error";
            return;
        }
        view.error.textContent = "";
        view.output.classList.remove("bp-stale");
        drawAnswer(view.output, reply.answer);
        view.root.dataset.state = "answered";
    }

    const views = playgrounds.map(build);
    loadModel().then(function (model) {
        views.forEach(function (view) {
            Object.values(view.fields).forEach(function (field) {
                field.addEventListener("input", function () { update(model, view); });
            });
            update(model, view);
        });
    }).catch(function (failure) {
        views.forEach(function (view) {
            view.error.textContent = String(failure.message || failure);
            view.root.dataset.state = "error";
        });
    });
})();
