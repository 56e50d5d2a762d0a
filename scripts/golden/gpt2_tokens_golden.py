#!/usr/bin/env python3
"""Golden ids for ddp4j's GPT2Tokenizer, made with OpenAI's tiktoken (encoding r50k_base = "gpt2").

Writes java/src/test/resources/golden/gpt2_tokens.json: for each case its text, the ids of
encode_ordinary(text) and, where the text holds "<|endoftext|>", the ids of
encode(text, allowed_special={"<|endoftext|>"}).

Nothing is downloaded: tiktoken's own r50k_base constructor is run with its loader pointed at the
ranks file inside JTokkit's jar (the one GPT2Tokenizer uses), and the file's SHA-256 is checked
against the hash tiktoken expects of OpenAI's copy, so the two libraries provably share the ranks.

Needs tiktoken, which Debian does not package (this is not a torch script):
    python3 -m venv /tmp/V && /tmp/V/bin/pip install tiktoken
    /tmp/V/bin/python scripts/golden/gpt2_tokens_golden.py [path/to/jtokkit-VERSION.jar]
The jar defaults to the local Maven repository's copy of the version pinned in pom.xml.
"""
import base64
import hashlib
import json
import os
import re
import sys
import zipfile

import tiktoken
import tiktoken_ext.openai_public as openai_public

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(ROOT, "java", "src", "test", "resources", "golden", "gpt2_tokens.json")
RANKS_IN_JAR = "com/knuddels/jtokkit/r50k_base.tiktoken"


def default_jar():
    pom = open(os.path.join(ROOT, "pom.xml")).read()
    version = re.search(r"<jtokkit.version>([^<]+)</jtokkit.version>", pom).group(1)
    return os.path.expanduser(f"~/.m2/repository/com/knuddels/jtokkit/{version}/jtokkit-{version}.jar")


def r50k_from_jar(jar):
    ranks_bytes = zipfile.ZipFile(jar).read(RANKS_IN_JAR)

    def load_from_jar(url, expected_hash=None):
        digest = hashlib.sha256(ranks_bytes).hexdigest()
        if expected_hash is not None and digest != expected_hash:
            sys.exit(f"{jar}'s {RANKS_IN_JAR} has SHA-256 {digest}, tiktoken expects {expected_hash} for {url}")
        ranks = {}
        for line in ranks_bytes.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return ranks

    openai_public.load_tiktoken_bpe = load_from_jar  # the constructor below calls it by this name
    return tiktoken.Encoding(**openai_public.r50k_base())


# Varied text: every branch of GPT-2's pre-tokenizing pattern and of byte-level BPE.
CASES = {
    "empty": "",
    "english": "The quick brown fox jumps over the lazy dog. It was the best of times, it was the worst of times; "
               "it was the age of wisdom, it was the age of foolishness...\n",
    "contractions": "I'm sure you'll see they've said it's theirs, and we'd know. DON'T SHOUT, I'M HERE! "
                    "rock'n'roll, 'quoted', O'Neill's dog's bone, can't won't shan't y'all",
    "digits": "0 1 12 123 1234 12345 123456789012345678901234567890 3.14159 -2.5e-10 1,000,000 $19.99 50% 2024-06-01 "
              "07:30:59 +1 (555) 010-9999 0x1F 0b1010 1st 2nd 3rd 4th",
    "whitespace": "a  b   c    d\t\te\t \tf\n\ng\n\n\n\nh   \n   i\r\nj \r\n k     \n\n    end   ",
    "leading_trailing": "   leading spaces and trailing ones   ",
    "only_spaces": "        ",
    "newlines_only": "\n\n\n",
    "tabs_code": "def f(x):\n\tif x > 0:\n\t\treturn x ** 2  # square\n\treturn -x\n\n\nclass A:\n    pass\n",
    "java_code": "public static void main(String[] args) {\n    for (int i = 0; i < args.length; i++) {\n"
                 "        System.out.println(\"arg \" + i + \": \" + args[i]);\n    }\n}\n",
    "json_url": "{\"name\": \"ddp4j\", \"tags\": [\"a\", \"b\"], \"n\": 42}\nhttps://example.org/path/to?q=1&r=two#frag "
                "user@example.com C:\\Users\\me\\file.txt",
    "punctuation": "!!! ??? ... --- ___ *** ### @@@ $$$ %%% ^^^ &&& ((( ))) [[[ ]]] {{{ }}} <<< >>> ~~~ ``` ''' \"\"\" "
                   ";;; ::: ,,, /// \\\\\\ ||| +++ ===",
    "accents": "naïve café résumé coöperate Zürich São Paulo Ångström façade jalapeño crème brûlée Đặng Việt",
    "greek_cyrillic": "Αλφάβητο ελληνικό. Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "cjk": "日本語のテキストを分割します。中文文本：我爱北京天安门！한국어 문장도 있습니다.",
    "arabic_hebrew_hindi": "مرحبا بالعالم שלום עולם नमस्ते दुनिया ক্ষ",
    "emoji": "emoji 😀😃😄 thumbs 👍🏽 family 👨‍👩‍👧‍👦 flag 🇫🇷🇯🇵 heart ❤️ keycap 1️⃣ 🤖🦀🐍",
    "combining": "e\u0301 a\u0308 n\u0303 Z\u0351\u0358\u035c\u0362 \u1100\u1161\u11a8",
    "unicode_spaces": "a\u00a0b\u2003c\u3000d\u2009e\u200bf\u202fg\u0085h\u000bi\u000cj\u001ck\u2028l\u2029m",
    "math_symbols": "∀x∈ℝ: x² ≥ 0, ∑ᵢ aᵢ = ∫₀¹ f(t) dt ≈ π/4 → ∞ ≠ ℵ₀ ½ ¾ ⅓ µ Ω ° ± × ÷",
    "mixed_scripts": "Tokyo東京2020オリンピック, Moskva-Москва99, αβγ123abc, abcΑΒΓ",
    "long_word": "Pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism "
                 "supercalifragilisticexpialidocious " + "a" * 300 + " " + "ab" * 150,
    "repeated": "hello hello hello HELLO Hello hElLo " * 8,
    "endoftext": "First document.<|endoftext|>Second document, with <|endoftext|> inside. <|endoftext|>\n"
                 "<|endoftext|><|endoftext|>end",
    "near_special": "<|endoftext| <|endoftext <endoftext|> <|fim_prefix|> <|endofprompt|>",
    "fortune": "%\nA day for firm decisions!!!!!  Or is it?\n%\n\"The time has come,\" the Walrus said,\n"
               "\t\"To talk of many things:\n\tOf shoes -- and ships -- and sealing-wax --\"\n\t\t-- Lewis Carroll\n%\n",
}


def main():
    jar = sys.argv[1] if len(sys.argv) > 1 else default_jar()
    enc = r50k_from_jar(jar)
    assert enc.n_vocab == 50257 and enc.eot_token == 50256
    out = {"tiktoken_version": tiktoken.__version__, "encoding": enc.name, "n_vocab": enc.n_vocab,
           "eot_token": enc.eot_token, "cases": []}
    total = 0
    for name, text in CASES.items():
        case = {"name": name, "text": text, "ids": enc.encode_ordinary(text)}
        if "<|endoftext|>" in text:
            case["ids_allow_eot"] = enc.encode(text, allowed_special={"<|endoftext|>"})
        assert enc.decode(case["ids"]) == text, name
        total += len(text.encode("utf-8"))
        out["cases"].append(case)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write("{\n")
        f.write(",\n".join(json.dumps(k) + ": " + json.dumps(v) for k, v in out.items() if k != "cases"))
        f.write(',\n"cases": [\n')
        f.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in out["cases"]))
        f.write("\n]\n}\n")
    print("wrote", os.path.relpath(OUT, ROOT), f"({len(CASES)} cases, {total} bytes of text)")


if __name__ == "__main__":
    main()
