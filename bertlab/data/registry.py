"""The dataset registry: every data file bertlab reads, where it comes from, and its sha256.

Each file is a `DataFile`, keyed by its path relative to a *mirror* laid out like the project's
offline mirror (``wikitext-2-raw/``, ``glue/``, ``squad-v1.1/``, ``conll2003/``, ``books/``,
``wiki/``).  A file records

* ``sha256`` -- the identity of the bytes stored at ``path``.  This pinned hash, not the URL,
  *is* the dataset: a source that now serves different bytes is reported as a checksum
  mismatch, never accepted (see data/README.md, "Checksum policy").
* ``url`` -- the canonical public address (the page or download that a paper would cite).
* ``sources`` -- where `bertlab.data.download.fetch` may download the bytes from, in order.  A source
  may be a zip archive (``member`` names the file inside it) with its own pinned hash.
* ``licence`` and ``in_mirror`` (whether the offline mirror holds the file).

The facts come from the mirror's MANIFEST.md and SHA256SUMS.  Books and Wikipedia files are
stored gzipped in the mirror (``sha256`` is the ``.gz``), while every download source serves the
raw text (``raw_sha256``).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class Source:
    """One place to download a file from."""

    url: str
    known_hash: str | None  # "sha256:<hex>" / "md5:<hex>" of what `url` serves; None = unknown
    member: str | None = None  # path inside a zip archive at `url`, None = `url` is the file
    note: str = ""


@dataclass(frozen=True)
class DataFile:
    """One file of one dataset."""

    path: str  # relative path in the mirror layout, e.g. "glue/SST-2/dev.tsv"
    dataset: str  # "sst2", "mrpc", "rte", "qnli", "squad", "conll2003", "wikitext-2", "wikitext-103", "books", "wiki"
    split: str  # "train" / "dev" / "valid" / "test"; for books and wiki the file's stem ("pg11", "AA_wiki_00")
    sha256: str | None  # of the bytes at `path`; None = no checksum published (see `note`)
    size: int | None  # bytes at `path`, None if unknown
    in_mirror: bool  # does the offline mirror hold this file?
    licence: str
    url: str  # canonical public URL
    sources: tuple[Source, ...] = ()
    gzip: bool = False  # mirror stores the file gzipped; sources serve the raw text
    raw_sha256: str | None = None  # sha256 of the decompressed text (= what sources serve) when gzip
    derive: str | None = None  # name of a recipe that rebuilds the file from other registry files
    note: str = ""

    @property
    def name(self) -> str:
        """Short name accepted by `fetch`: "<dataset>:<split>", e.g. "sst2:dev"."""
        return f"{self.dataset}:{self.split}"

    @property
    def download_path(self) -> str:
        """Relative path of the downloaded (raw, never gzipped) copy in the cache."""
        return self.path[: -len(".gz")] if self.gzip else self.path

    @property
    def download_sha256(self) -> str | None:
        """sha256 of what a download yields: the raw text for gzipped mirror files."""
        return self.raw_sha256 if self.gzip else self.sha256


CC_BY_SA = "CC BY-SA 4.0"
WIKITEXT_LICENCE = "CC BY-SA (Merity et al. 2016; text from Wikipedia)"
GLUE_NOTE_LICENCE = "no explicit licence; GLUE defers to the original dataset's terms (research use)"
MRPC_LICENCE = "Microsoft Research Paraphrase Corpus licence (research use)"
CONLL_LICENCE = ("annotations: University of Antwerp; text: Reuters RCV1, NOT redistributable "
                 "(Reuters/NIST agreement required)")
PD_US = "public domain in the USA (Project Gutenberg License)"
WIKI_LICENCE = "CC BY-SA 3.0 and GFDL (Wikipedia contributors, ~May 2015)"

_WT2_ZIP = ("https://wikitext.smerity.com/wikitext-2-raw-v1.zip",
            "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-raw-v1.zip")
_WT2_ZIP_HASH = "sha256:ef7edb566e3e2b2d31b29c1fdb0c89a4cc683597484c3dc2517919c615435a11"  # 4,721,645 bytes
_WT103_ZIP = ("https://wikitext.smerity.com/wikitext-103-raw-v1.zip",
              "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-raw-v1.zip")
_WT103_ZIP_HASH = "sha256:91c00ae287f0d699e18605c84afc9e45c192bc6b7797ff8837e5474655a33794"  # 191,984,949 bytes
_GLUE = "https://dl.fbaipublicfiles.com/glue/data/"
_SENTEVAL = "https://dl.fbaipublicfiles.com/senteval/senteval_data/"
_SQUAD = "https://rajpurkar.github.io/SQuAD-explorer/dataset/"
_CONLL_RAW = ("https://raw.githubusercontent.com/davidsbatista/NER-datasets/"
              "ab2e8178d7eb33f45f3f4c94dd0904115a38a549/CONLL2003/")
_BOOKS_RAW = "https://raw.githubusercontent.com/rcdm-uga/Gutenberg_Text/a0b16d35a9851168ce9ac649851c17b7ab08d48e/"
_WIKI_RAW = "https://raw.githubusercontent.com/jason-feng/wikiVisual/1c0fac92f29f17c1603bfffbe864e0dfdff66897/"


def _wikitext(version: str, split: str, sha256: str | None, size: int | None, in_mirror: bool, note: str) -> DataFile:
    zips, zip_hash = (_WT2_ZIP, _WT2_ZIP_HASH) if version == "2" else (_WT103_ZIP, _WT103_ZIP_HASH)
    member = f"wikitext-{version}-raw/wiki.{split}.raw"
    return DataFile(
        path=member, dataset=f"wikitext-{version}", split=split, sha256=sha256, size=size,
        in_mirror=in_mirror, licence=WIKITEXT_LICENCE, url=zips[1],
        sources=tuple(Source(u, zip_hash, member) for u in zips), note=note)


def _glue(task: str, split: str, sha256: str | None, size: int | None, in_mirror: bool = True,
          zip_name: str | None = None, zip_hash: str | None = None, licence: str = GLUE_NOTE_LICENCE,
          note: str = "") -> DataFile:
    zip_url = _GLUE + (zip_name or f"{task}.zip")
    folder = task.replace("v2", "")
    return DataFile(
        path=f"glue/{folder}/{split}.tsv", dataset=folder.lower().replace("-", ""), split=split,
        sha256=sha256, size=size, in_mirror=in_mirror, licence=licence, url=zip_url,
        sources=(Source(zip_url, zip_hash, f"{folder}/{split}.tsv"),), note=note)


def _mrpc(path: str, split: str, sha256: str, size: int, url: str, derive: str | None = None) -> DataFile:
    sources = () if derive else (Source(url, "sha256:" + sha256),)
    return DataFile(path=path, dataset="mrpc", split=split, sha256=sha256, size=size, in_mirror=True,
                    licence=MRPC_LICENCE, url=url, sources=sources, derive=derive)


_FIXED: list[DataFile] = [
    _wikitext("2", "valid", "4cd0f6876d07a413aa911261ff6d363c72d757d47f0fdd6015702014c89cb9c7", 1146846, True, ""),
    _wikitext("2", "test", "173c87a53759e0201f33e0ccf978e510c2042d7f2cb78229d9a50d79b9e7dd08", 1290590, True, ""),
    _wikitext("2", "train", "6707892fa3788b5ab9ed78ab5ff37d9fe825f6011a2ad4fcd6a6d467f0e7da57", 10940747, False,
              "not in the mirror (over its 4 MiB-per-file source limit); downloadable from the zip"),
    _wikitext("103", "train", None, None, False,
              "540 MB; no published sha256 of the member was found, so its identity is the pinned sha256 "
              "of wikitext-103-raw-v1.zip; the member's hash is recorded on first extraction"),
    _wikitext("103", "valid", None, None, False,
              "believed identical to wikitext-2-raw/wiki.valid.raw (same 60 articles, same sizes in HF "
              "metadata) but not byte-verified"),
    _wikitext("103", "test", None, None, False,
              "believed identical to wikitext-2-raw/wiki.test.raw (same 60 articles) but not byte-verified"),
    _glue("SST-2", "train", "48eac26399f8456935f81dd9e3a745c1430adb6c62e233ccfe22db4a0d15d1d1", 3806081,
          zip_hash="md5:9f81648d4199384278b86e315dac217c"),
    _glue("SST-2", "dev", "54a9c12c77e402fc14d6a66a506f24d999f596b0176eb777c972cccc2f9cc4b0", 94931,
          zip_hash="md5:9f81648d4199384278b86e315dac217c"),
    _glue("SST-2", "test", "69a938605609b3e6663b4487918fe1565eb293734e6e520d0366d1d412fd2a13", 197335,
          zip_hash="md5:9f81648d4199384278b86e315dac217c"),
    _glue("RTE", "train", "41e3a9b063433392343fad9e962cf2f58b681c78d8f71592f4186f0837246c5c", 846226),
    _glue("RTE", "dev", "80230dfa1347282e7b532b06a1004a76a710087541189bf874223ddf0e3819fb", 90343),
    _glue("RTE", "test", "6e33f09b5c2bfd5fd5fde217070f3dd49e484e33b9752b5864cf36fc421a213f", 933969),
    _glue("QNLIv2", "dev", "ac19409dcb04631eaaa094bdebdcf621086bc352503dfb6a1a648b614986f4fd", 1367342,
          licence=CC_BY_SA + " (derived from SQuAD v1.1)"),
    _glue("QNLIv2", "train", None, None, in_mirror=False, licence=CC_BY_SA + " (derived from SQuAD v1.1)",
          note="not in the mirror (about 28 MB); no published sha256 of the member was found"),
    _mrpc("glue/MRPC/msr_paraphrase_train.txt", "msr_train",
          "60a9b09084528f0673eedee2b69cb941920f0b8cd0eeccefc464a98768457f89", 1047044, _SENTEVAL + "msr_paraphrase_train.txt"),
    _mrpc("glue/MRPC/msr_paraphrase_test.txt", "msr_test",
          "a04e271090879aaba6423d65b94950c089298587d9c084bf9cd7439bd785f784", 441275, _SENTEVAL + "msr_paraphrase_test.txt"),
    _mrpc("glue/MRPC/dev_ids.tsv", "dev_ids",
          "971d7767d81b997fd9060ade0ec23c4fc31cbb226a55d1bd4a1bac474eb81dc7", 6222, _GLUE + "mrpc_dev_ids.tsv"),
    _mrpc("glue/MRPC/train.tsv", "train", "69abcedee3cf738c6ce58d772e43e1b7cdf5b4edee4aceda459c0d9f4e5599f3", 941471,
          _SENTEVAL + "msr_paraphrase_train.txt", derive="glue-mrpc"),
    _mrpc("glue/MRPC/dev.tsv", "dev", "9e8f284788040f7c9ecde2e1b3c07237c756f926bd9ef8548ef5d34b56f69f17", 105616,
          _SENTEVAL + "msr_paraphrase_train.txt", derive="glue-mrpc"),
    _mrpc("glue/MRPC/test.tsv", "test", "aee460ceda833926b8ab2ad952d399f5cf8bc9335cff19afcac03dc449558622", 445335,
          _SENTEVAL + "msr_paraphrase_test.txt", derive="glue-mrpc"),
    DataFile("squad-v1.1/dev-v1.1.json", "squad", "dev",
             "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9", 4854279, True, CC_BY_SA,
             _SQUAD + "dev-v1.1.json",
             (Source(_SQUAD + "dev-v1.1.json", "sha256:95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9"),)),
    DataFile("squad-v1.1/train-v1.1.json", "squad", "train",
             "3527663986b8295af4f7fcdff1ba1ff3f72d07d61a20f487cb238a6ef92fd955", 30288272, False, CC_BY_SA,
             _SQUAD + "train-v1.1.json",
             (Source(_SQUAD + "train-v1.1.json", "sha256:3527663986b8295af4f7fcdff1ba1ff3f72d07d61a20f487cb238a6ef92fd955"),),
             note="not in the mirror (30 MB)"),
    *[DataFile(f"conll2003/{split}.txt", "conll2003", split, sha, size, True, CONLL_LICENCE,
               "https://www.clips.uantwerpen.be/conll2003/ner/",
               (Source(_CONLL_RAW + f"{split}.txt", "sha256:" + sha,
                       note="the copy the Hugging Face conll2003 loader used (removed from the repository's HEAD in 2022)"),))
      for split, sha, size in [
          ("train", "c99b26852dabf57ca9d30a0e892b84544cc8962003151e14a71077c55dc66db5", 3283418),
          ("valid", "f1f6469322876887de1d04acd43c59b02f59d5b02acf42c027132fa1bf349cb2", 827441),
          ("test", "82e0c72d262f86ad3e78b15c5d980bbf87cb205aa4bf6d2d97643f463f8d7ff7", 748093)]],
    DataFile("books/INDEX.tsv", "books", "INDEX", "d08ea77135af2c543c07576109d4358164f69b905f8c770157c8f12011b5e791",
             10868, True, PD_US, "https://www.gutenberg.org/", (),
             note="index of the books corpus written for the mirror; the same facts are in BOOKS below"),
]


_BOOKS = [
    # (path, sha256 of .gz, sha256 of raw text, raw bytes, words, source path, title, author)
    ('books/pg11.txt.gz', '44e645c3cf3fc1baf3c48e311a4ee8acc24c78a3c4786385131113a99724e2dd', 'ef89dc86d790dbeafe584e2891e1acb603bc264271b6a3250d8e28ef48b8372b', 173592, 26460, "Carroll, Lewis/Alice's Adventures in Wonderland.txt", 'Alice’s Adventures in Wonderland', 'Lewis Carroll'),
    ('books/pg12.txt.gz', '6bdb39263271234603d0abb77b70f60f962324bbda2af3e3d4460c823afe3d57', 'b8b40e5f4f87e1f00e9f7ad2617ce3b10838e9ad03d78db57367c3176ed5dfef', 193604, 29308, 'Carroll, Lewis/Through the Looking-Glass.txt', 'Through the Looking-Glass', 'Charles Dodgson, AKA Lewis Carroll'),
    ('books/pg16.txt.gz', '00fb80bc987b533faccd657464f157e0906c548e91aa8fda7208012aada1ec50', 'e08133f7a20cfe0010ec1f6d925b46211e0562f483f609766be2be2a0a04cb71', 290752, 47452, 'Barrie, J. M. (James Matthew)/Peter Pan.txt', 'Peter Pan', 'James M. Barrie'),
    ('books/pg33.txt.gz', '65838f0e4b449bf4955bfef2ec2e6d043e118cc693e347670396e6c8265ddbaa', '7905e5a18a046c70e1da912b6c3f3118e2c45d2d4002d9cebd84db0f8eac161f', 516720, 83657, 'Hawthorne, Nathaniel/The Scarlet Letter.txt', 'The Scarlet Letter', 'Nathaniel Hawthorne'),
    ('books/pg35.txt.gz', '506835ef2bc2be5131d4e5fc430587765d7ea2455f59e5a764bb0c333d7f47eb', '0eb70818a4c7e2e04f91be807bad37ca5c1475cd51cec2a7b620c4db2b595ce4', 204492, 32467, 'Wells, H. G. (Herbert George)/The Time Machine.txt', 'The Time Machine', 'H. G. Wells'),
    ('books/pg36.txt.gz', '6ea6fceae5fd8fc11620ea0409b23d615d5e78f47a2f32d9bb9d577141a4d108', '0c9bea907452abd6e9a31d9152188ef5007f0e2d3e4a52d7a6a627a37616249f', 366813, 60086, 'Wells, H. G. (Herbert George)/The War of the Worlds.txt', 'The War of the Worlds', 'H. G. Wells'),
    ('books/pg43.txt.gz', '165122ca4624506590ff98d9d8e9f012e86ed1e069b41f21d073ba98655ce8f1', '3663a4f1d58f56248bf3708a27c1f143a9ec96ea5dbb78d627a4330b73f8b6db', 163463, 25643, 'Stevenson, Robert Louis/The Strange Case of Dr. Jekyll and Mr. Hyde.txt', 'The Strange Case Of Dr. Jekyll And Mr. Hyde', 'Robert Louis Stevenson'),
    ('books/pg45.txt.gz', '484bf22c19fb329aa85bfbe0faf36b32b30a93f4d48b7f707e4c491764722fb9', '1e125e179f8474fa08ba345ae03139bafee4ca94cd5dda82471ca042b2a43f23', 606841, 102539, 'Montgomery, L. M. (Lucy Maud)/Anne of Green Gables.txt', 'Anne of Green Gables', 'Lucy Maud Montgomery'),
    ('books/pg46.txt.gz', '358533b29f0684c39d21a1887be4637100e017344325f85e0c4b5371c7b1d356', 'dc673993109aa9326cda6c111f8303578f4868c06deeab64e3b061a7efdc4b36', 182054, 28558, 'Dickens, Charles/A Christmas Carol in Prose; Being a Ghost Story of Christmas.txt', 'A Christmas Carol', 'Charles Dickens'),
    ('books/pg47.txt.gz', 'e26eacdd1a21e8cbe5e95ee166569ac329f84f158915ce069f0caa83f57cdaeb', '90267b6bbc29cb7ee787756bf8815d345abae02d23146dbeb6e1518a94eef425', 532096, 91146, 'Montgomery, L. M. (Lucy Maud)/Anne of Avonlea.txt', 'Anne Of Avonlea', 'Lucy Maud Montgomery'),
    ('books/pg54.txt.gz', '4b87f08a8cb373f92f495edd4ccd5bdf0871e1a0be6c51d09ff92d98d27b9fdf', 'ed840664386fb16386a7e3e3a69ff6e2a9099a1cbb714a6eed4401205c5deb46', 269641, 42512, 'Baum, L. Frank (Lyman Frank)/The Marvelous Land of Oz.txt', 'The Marvellous Land of Oz', 'L. Frank Baum'),
    ('books/pg55.txt.gz', '904b83ac9401be6b8092ca0b0640de960d786bc5b82a2591c1dc6241d9719666', '5ecaf9efc4c67057adbf9549cc23fb399b31c1b043a838a9738f2eeb9a87ba01', 232807, 39601, 'Baum, L. Frank (Lyman Frank)/The Wonderful Wizard of Oz.txt', 'The Wonderful Wizard of Oz', 'L. Frank Baum'),
    ('books/pg62.txt.gz', 'ca323b565b8248ea7c087b492c82c4e319357ee0faa7f403e4a2dfbddb73adbb', '01c12c7a6bf0fba45d33c79f77a2a481d52d0eb5674819ce0cf5e68645a56d8c', 399150, 67425, 'Burroughs, Edgar Rice/A Princess of Mars.txt', 'A Princess of Mars', 'Edgar Rice Burroughs'),
    ('books/pg64.txt.gz', 'd54748ec745552d4955f1303692e03337ceb2bad8d2f1cf56c5ab52b76da68df', 'e9815c75c696d70b499c454d685ad1d686a5017b8495c18f4c3e3d5eace71642', 481424, 82727, 'Burroughs, Edgar Rice/The Gods of Mars.txt', 'The Gods of Mars', 'Edgar Rice Burroughs'),
    ('books/pg70.txt.gz', 'fcf2a0dc97ba89cb3ab14a610f076fea36947b2d3459b6376708da5b6d34b9c4', '4b5274715487c5041a2648057ca0d612a2fcb198a4f69c395de3b9f53aac98d9', 564266, 94466, 'Twain, Mark/What Is Man? and Other Essays.txt', 'What Is Man? And Other Stories', 'Mark Twain (Samuel Clemens)'),
    ('books/pg74.txt.gz', '9058e37f30b5934fc3fb21c7d6b2f7efb4c1a3909c01474a6d67f64052f242f5', '2c92f6ddc08505e9061a508a33adc262046b7c74b126f5ad45aa4cc8df9e457c', 428101, 70822, 'Twain, Mark/The Adventures of Tom Sawyer.txt', 'The Adventures of Tom Sawyer, Complete', 'Mark Twain (Samuel Clemens)'),
    ('books/pg77.txt.gz', '8c46c04f7482c7e6ec3e10c9556d71e113292345ad84c7c8f706faf8e97166dd', 'bf23e00c3d6f2f13b46e8f07fd766d435f9bcb933b7848a934ab7e471484af15', 646239, 104900, 'Hawthorne, Nathaniel/The House of the Seven Gables.txt', 'The House of the Seven Gables', 'Nathaniel Hawthorne'),
    ('books/pg83.txt.gz', 'd41086cf3e9fb17c39a2b9abab3817b96a87f052067faccb5912b1e1c076e8ec', 'bb675ae145edd8420354a0ccbe9deaf43b21a72b1c6b3e7d75258aa9b0ae3a48', 580950, 91643, 'Verne, Jules/From the Earth to the Moon; and, Round the Moon.txt', 'From the Earth to the Moon', 'Jules Verne'),
    ('books/pg103.txt.gz', '631ccf63326394c77dc3ab4a643ea7f8472a8a6d8c46f5c598994ca95135f1b7', 'b5bd33ca78ea5edb314d0f543180229819e4617851c00246adf7ef27b4c6ec4d', 398659, 63299, 'Verne, Jules/Around the World in Eighty Days.txt', 'Around the World in 80 Days', 'Jules Verne'),
    ('books/pg105.txt.gz', '6684e555b18a755c21b219a7009b398d6111017355b30cc07b34bf84f6728707', '4f76afb38188c4a16a7e45662f8dfc06a7ecff1018b612b332e1dcebe760e6bd', 495023, 83306, 'Austen, Jane/Persuasion.txt', 'Persuasion', 'Jane Austen'),
    ('books/pg113.txt.gz', 'b0d3592a40a7e498147b526254d824687473a7dbd94dd945de9d4476cf3a79c6', '7357d65100a12a297412c29bb7d6938477cee9fde93520b29db48e7195ffffe7', 475380, 80646, 'Burnett, Frances Hodgson/The Secret Garden.txt', 'The Secret Garden', 'Frances Hodgson Burnett'),
    ('books/pg120.txt.gz', 'b14cb7309298bee646b62c2887e749c446fabb210c8c0c80045c0c5f4b0dff4b', 'a06adea480b7b121dd23b757969e984e60f5b9a2e02aec30a7a45bd8d2cbb17d', 396591, 68609, 'Stevenson, Robert Louis/Treasure Island.txt', 'Treasure Island', 'Robert Louis Stevenson'),
    ('books/pg121.txt.gz', 'a7399a27cae492ae98a78dbd87e7e906a1b5b7436a5a233130d0028966bf6868', '2fb33a1de99e8d8f1cf613e7ea9ed55686a7e076cdd4299d0e9676b47a144e36', 465390, 77158, 'Austen, Jane/Northanger Abbey.txt', 'Northanger Abbey', 'Jane Austen'),
    ('books/pg126.txt.gz', '0d39c031b0ef00aef14902a3c87c18249b178dbbdda9feb0d6fa5e471929cfd4', 'f37e5759e72a42c09bd0af0a1c4be4dc0da296368ced6936c978d1b4204a5d05', 187678, 29233, 'Doyle, Arthur Conan/The Poison Belt.txt', 'The Poison Belt', 'Arthur Conan Doyle'),
    ('books/pg128.txt.gz', '9cd120d400dafff26d0321d0545f1ccd51d43d36e4750d3d8061f6e3e4e16817', 'bc0bc9384c8da75922efe0b1d67d8ef565d85ca1c0b275211f56990a1fc475c9', 629056, 111609, 'Lang, Andrew/The Arabian Nights Entertainments.txt', 'The Arabian Nights Entertainments', 'Andrew Lang.'),
    ('books/pg139.txt.gz', 'b5ba619779919742227457a8d1d1e43e789c88acd99841e7c903556c01954e5e', '703939e6f919bcecd06422e73e15de0429aa0ab6d39d4cea1092b39cc39e4a2e', 451815, 75782, 'Doyle, Arthur Conan/The Lost World.txt', 'The Lost World', 'Arthur Conan Doyle'),
    ('books/pg143.txt.gz', 'cad2b520125236db7314fdc8bafff279b6c7c8e042e906014bdcaafcfd2d707a', 'e0aa1799bc7fedc1d494c063b5db43293816814d8d035ea3eb5cc5e88dcdfd64', 694291, 115176, 'Hardy, Thomas/The Mayor of Casterbridge.txt', 'The Mayor of Casterbridge', 'Thomas Hardy'),
    ('books/pg146.txt.gz', '875c7a56bc067bba34a5bf2c3a5ec2d2d3c09d738f32207f23ab881640f6f36e', '4734a85390c46fe0a08a2cdaacaa716862a7cf0d57990aafb3f8626d19263d9d', 391942, 66380, 'Burnett, Frances Hodgson/A Little Princess\\rBeing the whole story of Sara Crewe now told for the first time.txt', 'A Little Princess', 'Frances Hodgson Burnett'),
    ('books/pg148.txt.gz', '550f4ad3a2a76f0f971f2ec2484c04677b325ce28a20d682b531c017d74efccc', 'eab4189e3a7c9a1ecb3a119baef98d9263dda03f6910ff7b2ddad165f4bbf4ee', 405704, 67188, 'Franklin, Benjamin/The Autobiography of Benjamin Franklin.txt', 'The Autobiography of Benjamin Franklin', 'Benjamin Franklin'),
    ('books/pg163.txt.gz', '6e03912d421e5613db0a67de276ae114785b96550e93cc4d1511e19d9cb81e69', 'b79a79f3bfea17e8ca8c23022592f0fb98ee3ce6b332a6cffaf83795f01726f6', 212795, 34152, 'Alcott, Louisa May/Flower Fables.txt', 'Flower Fables', 'Louisa May Alcott'),
    ('books/pg166.txt.gz', '4f209acb233654178e4f801f3b6baced6aa6fcf70b139dd283baba78d68f47be', 'd4f17c2b7c758dd8027059f258f079f5ca092fb56aac77d4e7e6085da9f82951', 343514, 57317, 'Wharton, Edith/Summer.txt', 'Summer', 'Edith Wharton'),
    ('books/pg170.txt.gz', 'a73fb310ce64e1d3abc85e68178be95966fa887d8e6cbfc7f119446dbfb4fc8a', '7761416733b3ec3ec1f2b852e1f56dcf634518e11f81eccadba63b0143dd82a1', 377865, 62172, 'Collins, Wilkie/The Haunted Hotel: A Mystery of Modern Venice.txt', 'The Haunted Hotel', 'Wilkie Collins'),
    ('books/pg178.txt.gz', 'ae8efd58c3115fb3ff125296cdb484518336a8f28abbd985c7b8362ac91d6d88', '1eed2c8430526715cd305f3a333cc6ce321b2011498797d152f319e43120c09d', 458501, 75739, 'James, Henry/Confidence.txt', 'Confidence', 'Henry James'),
    ('books/pg179.txt.gz', '13f9831f644aa0a8fa0b5cc73bcbb016e67155761fe998b270e01ca75226cb13', '2c5e0b09fb6feefdd66b4b2aa73ca261d1623668f40e4acc0b4579dede9bb86a', 371199, 59005, 'James, Henry/The Europeans.txt', 'The Europeans', 'Henry James'),
    ('books/pg204.txt.gz', '69d6c7f19ebd84bdce140611f31f1888124868c4f2e1311818a4364f99f25c0c', '386bd937e8478eafcaddef275f2c9837c0c483b7cff6b5be41833b81108bcbfa', 477689, 78934, 'Chesterton, G. K. (Gilbert Keith)/The Innocence of Father Brown.txt', 'The Innocence of Father Brown', 'G. K. Chesterton'),
    ('books/pg205.txt.gz', 'ab0bd88bb799a6817276e4208d842ee820e24937150697c132aa6cb6440f2acb', '3cdaf6e0f089bd303f38021ca7ad7294f0734145a21384ca26989135b13c950d', 667902, 115809, 'Thoreau, Henry David/Walden, and On The Duty Of Civil Disobedience.txt', 'Walden, and On The Duty Of Civil Disobedience', 'Henry David Thoreau'),
    ('books/pg215.txt.gz', 'bdc66d058127b58a803b7feaca63cc893ffe8a06063f770f68c6e1ed8d535ef6', '185ce86741620361e814e92d2bc908dea2f85fcdd24f174e146643ee1dedb76e', 199221, 31851, 'London, Jack/The Call of the Wild.txt', 'The Call of the Wild', 'Jack London'),
    ('books/pg219.txt.gz', '58c9a4d4128986f6571d017a7e911ac2e8275eb086871d11a62cc87a9e914da1', '3ff70e5085686aad528514e5bfbf4198bd84632c90b2b022a769471a224d06de', 234086, 37934, 'Conrad, Joseph/Heart of Darkness.txt', 'Heart of Darkness', 'Joseph Conrad'),
    ('books/pg223.txt.gz', 'bc5ef7a7c696ee4c210194025c27806cbc07cec16afe9760d2be6eb2d1e6988b', '8007ca66b191ed7514d88fa26391a6cc4fb864eafdebf993a95050705e354dcd', 434740, 71669, 'Chesterton, G. K. (Gilbert Keith)/The Wisdom of Father Brown.txt', 'The Wisdom of Father Brown', 'G. K. Chesterton'),
    ('books/pg243.txt.gz', '9bb0659291c15f9faac5af8a793a414a91a2cc9b9a8e3f98d4b63629b14e294d', '1588c8abec767a142d2249e895ec935482cf08d65ecda75bfe9fd9c050d90e99', 352270, 57756, 'Tolstoy, Leo, graf/The Forged Coupon, and Other Stories.txt', 'The Forged Coupon and Other Stories', 'Leo Tolstoy'),
    ('books/pg267.txt.gz', '57aaa1b5e9039be8a16cdf4c91d155b461386b853e8d08cbd2e782a500d95910', 'a89befcfc688bde600113ec5605e49852e00a9d0da727c0aef0d5832d40b88d2', 177944, 26585, 'Wharton, Edith/The Touchstone.txt', 'The Touchstone', 'Edith Wharton'),
    ('books/pg293.txt.gz', 'dde07c1d29bb76c4f09c23b0bc048ccd8310cba5a0925fd078dd97de90032981', '0915929daeae29acfd62c8b82543b9a1b686139c8d75db19387471cbe5d1cff6', 366289, 59174, "Alger, Horatio, Jr./Paul Prescott's Charge.txt", "Paul Prescott's Charge", 'Horatio Alger'),
    ('books/pg296.txt.gz', '936c780e93d84474a449b50bb6f150f5e1cbf8007a78f0fa46fd37f16188fd56', '831645bfc5292c1d06254815c17ed37e269d61f88f477f34599c7fd25911ce9d', 181506, 27768, 'Alger, Horatio, Jr./The Cash Boy.txt', 'The Cash Boy', 'Horatio Alger Jr.'),
    ('books/pg310.txt.gz', 'e632e5e1897deabd7e8f2ee094688d58b925568f57437d675ade0bd2f42f7221', '045655a298cb09c91d35db7945e60fcb833cd73a9c50035f3984f4847db9769f', 234248, 39056, 'London, Jack/Before Adam.txt', 'Before Adam', 'Jack London'),
    ('books/pg342.txt.gz', 'a9228f651be28f477082f170556342a9e389f3bc4aaf4a06e3a2cb6d27d511b0', '49ee9bebfcb0cb4a392fb0c248aff0a518e98bef8891c53f52483ddfac4a9ce4', 188735, 31150, 'Barrie, J. M. (James Matthew)/Margaret Ogilvy.txt', 'Margaret Ogilvy', 'J. M. Barrie'),
    ('books/pg376.txt.gz', '1a8c79818b19b119363fa4f25a115d72a5bb65a6a6735390f3f76789b6546390', '64823286fb2879c8828ad406e6535d57933f963b68237798f681be3cc1368dec', 539917, 94963, 'Defoe, Daniel/A Journal of the Plague Year\\rWritten by a Citizen Who Continued All the While in London.txt', 'A Journal of the Plague Year', 'Daniel Defoe'),
    ('books/pg451.txt.gz', 'd63b7c786cc155ce54ad7be7b03b569e8596080ab7a0e8c886ccd6c6d05bf9c0', 'fda62e5611e7dd957d90b3ad532490b37a0d8c037349595b709759fbb2c2b06b', 243198, 39784, 'Conrad, Joseph/The Shadow Line: A Confession.txt', 'The Shadow-Line', 'Joseph Conrad'),
    ('books/pg469.txt.gz', 'f5a543bf5ae022a322bf2196d040e180d18f8432c143375573fe28d10a7036b1', 'd95c997758db24026479179ddebc6e53d57002a3e38fdb74bed9be6845de22a6', 338356, 55836, 'Balzac, Honoré de/The Duchesse of Langeais.txt', 'The Duchesse de Langeais', 'Honore de Balzac'),
    ('books/pg561.txt.gz', 'cd2d73826f1196b91bcfc5cec28bb753650bb3e9db55c18b8145571e1839bddc', '5205cd7344af0928062673c02085213132c4f3978fc00f894d986cc260b85724', 558551, 100191, 'Defoe, Daniel/The Further Adventures of Robinson Crusoe.txt', 'The Further Adventures of Robinson Crusoe', 'Daniel Defoe'),
    ('books/pg564.txt.gz', '9664116735e1b37c046510b954a3b614f86b87e2d36090837cd5bdd13b6a97e9', '70968a9ea82dbe9d5696f052d0f147c9c027319a26a72e7cab78e3ebee5ab873', 587963, 95631, 'Dickens, Charles/The Mystery of Edwin Drood.txt', 'The Mystery of Edwin Drood', 'Charles Dickens'),
    ('books/pg600.txt.gz', '30b48c63b701df132a20211144e7bc990aa2c9103c7a3a904b5ca900d2dfc35a', 'be3e7d074682802bd47bc48f269c24744ede033ab2e0e2e0dc2fde966f2b4d17', 265613, 44112, 'Dostoyevsky, Fyodor/Notes from the Underground.txt', 'Notes from the Underground', 'Feodor Dostoevsky'),
    ('books/pg619.txt.gz', '52c1ad0577de7897d32ad2b414c543bc68125012e96b1a6fc1e8a68643444c40', '18f7b88e8fa2e394fcb6489464ef802f717fdaa84820c81cbdfede0a74c1a9c3', 426948, 71804, 'Trollope, Anthony/The Warden.txt', 'The Warden', 'Anthony Trollope'),
    ('books/pg623.txt.gz', 'fc5c398e95d33c2675a4d11aac7118bdce5def93373a08d54b41b49badb74f44', 'f1e723f62a2c361a1f5e8822eaf0e79e393d48a1e7c1290d6a1b40a8c79f35a9', 252079, 40470, 'Morley, Henry/The Battle of the Books, and other Short Pieces.txt', 'The Battle of the Books', 'Jonathan Swift'),
    ('books/pg689.txt.gz', 'a725cb079269142f58e429b4d230083e374a8a2b7c659e842df5d54a4e78dc4b', '64dd8c100fb7dd2db33c928140554924e43c8622216a62dc51ddef9ff19fc79a', 384144, 64122, 'Tolstoy, Leo, graf/The Kreutzer Sonata and Other Stories.txt', 'The Kreutzer Sonata and Other Stories', 'Leo Tolstoi'),
    ('books/pg696.txt.gz', 'fbf369507f3708f70aec1f279343e42af57fa30c109bad7f579c96aad38ef4c3', 'aff2f85e594c8e6e74062fcadc9bf381b89ea0affa1121dee772a964c21bf5b1', 241301, 36611, 'Morley, Henry/The Castle of Otranto.txt', 'The Castle of Otranto', 'Horace Walpole'),
    ('books/pg770.txt.gz', 'a794167dc12fb66f109100f9eb48db49a4aaa9c7b9a1658f18465a7270a09614', 'd8eb789ab338b895621dfc19fc276ea24dd02001a3ca4c563c710f8044c42ec6', 307867, 52585, 'Nesbit, E. (Edith)/The Story of the Treasure Seekers\\rBeing the Adventures of the Bastable Children in Search of a Fortune.txt', 'The Story of the Treasure Seekers', 'E. Nesbit'),
    ('books/pg773.txt.gz', '5549352184d2899fe6170fc5f3288b8777dd9b1e1c821f239c907bb1ec94f650', '7ef79b46bd7df8b056657bdbe991e10e2798893920a987f59b5a45f822862f0f', 249594, 39538, "Wilde, Oscar/Lord Arthur Savile's Crime; The Portrait of Mr. W.H., and Other Stories.txt", "Lord Arthur Savile's Crime", 'Oscar Wilde'),
    ('books/pg774.txt.gz', '695a25f292c284ad0095b3e488f12de008e354e4eaad295e19a9df963e378697', '3c18d02d8d103cd2bf7586987959d67481e0407b441a72f070fe956a1fe49836', 325391, 52175, 'Wilde, Oscar/Essays and Lectures.txt', 'Essays and Lectures', 'Oscar Wilde'),
    ('books/pg794.txt.gz', '4c301c49163478e7fe18299407cb6cd5f0b6adc9356f06cd55eff366b7cdd524', '2e8e2b9cef371a271f8522a1441ba0861d51aac4a708707dac7c6218cd3b4de9', 453335, 78304, 'Nesbit, E. (Edith)/The Wouldbegoods: Being the Further Adventures of the Treasure Seekers.txt', 'The Wouldbegoods', 'E. Nesbit'),
    ('books/pg829.txt.gz', '5f2da1d08934354ac62822afa6419f6c9575a187b1dc6ac2777b350d86898b23', '8a266f535f7cb948804d0642a01e8a218935bd8a9f7e583c27e4353af3b83a03', 611926, 104300, "Swift, Jonathan/Gulliver's Travels into Several Remote Nations of the World.txt", "Gulliver's Travels", 'Jonathan Swift'),
    ('books/pg863.txt.gz', '6971fd1f4f1d45f3851f288f9db5b6699e1efdf3111a90e1bf306d34c53ab5ca', '01822d9242d2d232a61c22ac73bbe36f0282ca7c207e0b3f9a1a9abe37590b28', 361770, 56551, 'Christie, Agatha/The Mysterious Affair at Styles.txt', 'The Mysterious Affair at Styles', 'Agatha Christie'),
    ('books/pg965.txt.gz', 'fe999a627151889555a6171513fafcdcf08367bc746ecc5b60fcf1099a099cfc', '8d6a047f4292d8c10a9ed45b80082bc28d5473d1fc35ab907014a335020a0e93', 449503, 73318, 'Dumas, Alexandre/The Black Tulip.txt', 'The Black Tulip', 'Alexandre Dumas (Pere)'),
    ('books/pg977.txt.gz', '0dc9aa7addbfdc20ae50356b5590d8aa00b6f1f471ecf835760d064c81d9f798', '4038388a8e23f56affcfc35f9dfd3c3c55ecd079d291328076de865d0b321b09', 171152, 26291, 'Kipling, Rudyard/American Notes.txt', 'American Notes', 'Rudyard Kipling'),
    ('books/pg1028.txt.gz', '8dd4227c78516d8f3b1396aaaa528015ac8465f160541656d761241cbc28b2b0', 'f72b637c225af992d5210d216d77211ca020a71b54698c2d9b272c1e378c0e06', 536670, 88072, 'Brontë, Charlotte/The Professor.txt', 'The Professor', '(AKA Charlotte Bronte) Currer Bell'),
    ('books/pg1155.txt.gz', '6a161fe787ad25908e6c62b1e7b70cd2654a81029795d98a5ab03183c6eff72a', '5bdec4fbc69de43c4ae122054bf5e5d6cf47285f3a1818f91f5ac7875cba5091', 473688, 75327, 'Christie, Agatha/The Secret Adversary.txt', 'The Secret Adversary', 'Agatha Christie'),
    ('books/pg1188.txt.gz', '2d423c6eea3d4d0c34e8b284545469377d6e039098bdeeded055459b94c0da63', '7702a10110c89ef9f5c4d742a6e445d52a5d64f51779adeff69bce79d6a4074c', 333508, 55236, 'Stoker, Bram/The Lair of the White Worm.txt', 'The Lair of the White Worm', 'Bram Stoker'),
    ('books/pg1223.txt.gz', '6d7e01dac64b5ef7ac112a7d9b0e9b13263325adbbc9cdb3e1344e96ce0c6287', 'efe2d411affa21eca402f48dcd1b1bffde1ef5df3b815142f1a09f29fc3963cb', 502867, 82016, 'Balzac, Honoré de/Ursula.txt', 'Ursula', 'Honore de Balzac'),
    ('books/pg1423.txt.gz', '8e733691b814420fbbbbd3b5ba5448349f9bdb66b789f7c7195d6f00205b5873', 'bbfa7548f2fb455b0304376899c07c52d495cdf43606416fc5ba17b5bdd88015', 295977, 47677, 'Collins, Wilkie/No Thoroughfare.txt', 'No Thoroughfare', 'Charles Dickens and Wilkie Collins'),
    ('books/pg1436.txt.gz', '4305a62ee1da7084cc8d0d270ba4bc22f0a4b4f3935c0d78af6c4eac4659082e', '96437fc521304138459007d339d65cd827e1221c0cca12c55d66d3dfcd894914', 255258, 41231, 'Morley, Henry/A Voyage to Abyssinia.txt', 'A Voyage to Abyssinia', 'Jerome Lobo'),
    ('books/pg1460.txt.gz', '3c9d7a7c6ee029579451ffb13dcede748cd63fa16b767cf6498ae6f35ed9e234', 'cd47cb0878184aeaf6715adb822066c215e8408d82c5eed83a49f37fcee2002b', 362241, 57488, 'Scott, Walter/The Black Dwarf.txt', 'The Black Dwarf', 'Sir Walter Scott'),
    ('books/pg1461.txt.gz', 'aec1fe60f5903e424021cff255704bc1d9f537e58dc3b8255dc26bb7ea9f0ea2', '07092af3ff53c2496cd11aa574ea296f9fd844cdc2ea0389484223d028967307', 556697, 88891, 'Scott, Walter/A Legend of Montrose.txt', 'A Legend of Montrose', 'Sir Walter Scott'),
    ('books/pg1572.txt.gz', 'a34f86da945b11b56e59f45703c14eb16586e91d7909daf55f1edf4da830b27c', '4975a550907207357388c7c48227f5d577fb01e8bd9a0236379b24cb74256136', 434225, 72742, 'Jowett, Benjamin/Timaeus.txt', 'Timaeus', 'Plato'),
    ('books/pg1585.txt.gz', '610317a4a9b7f1fde58d28164c6df6ffbc9c49eaef8c79365bb50d0ba66e7b62', '9ce51538a6d286de894f7ac0d8ca927a59523de7c9ee154654b5c7c4d5adee80', 361964, 57526, 'Stevenson, Robert Louis/The Wrong Box.txt', 'The Wrong Box', 'Robert Louis Stevenson and Lloyd Osbourne'),
    ('books/pg1591.txt.gz', '13c59312a9b56ff85049f5fc041e7c123ae4cb547eba1fdef872c3d657f66ec1', 'b646a47c55ceb218662e4b355f0a0bafed90e58e6ea11249c922b3c4fa0c4884', 176081, 27972, 'Jowett, Benjamin/Protagoras.txt', 'Protagoras', 'Plato'),
    ('books/pg1594.txt.gz', '2099fcdbdda4ca0580a2f30a8309251a57fafa18c09d1056e51ca2fdc0d97b8c', '98812f2027a510f1183d5fea0b6ffff34d00e40353e722bda9f307b5f88b841a', 356759, 57985, 'Lang, Andrew/Essays in Little.txt', 'Essays in Little', 'Andrew Lang'),
    ('books/pg1597.txt.gz', '0cf0af60c60dda076c3a1a8c64e89308da52c55eeda3f8a0c75f164a8f9bbbda', '74e4244ac7dc67bc5f22745057c7c98000a7118ab14d0e1526b7ae445e8e2f15', 329099, 55429, "Andersen, H. C. (Hans Christian)/Andersen's Fairy Tales.txt", "Andersen's Fairy Tales", 'Hans Christian Andersen'),
    ('books/pg1689.txt.gz', '2bbd7e589030c91aae87980bbfa043c5d96fd31f9bcbf033f5bbf9fb7af3575a', '3d7c9cc942314b53bd53d1ed8ca68c20be2b961b3c08c8a5b02467fc641ab6fc', 349137, 52411, 'Wells, H. G. (Herbert George)/The Pivot of Civilization.txt', 'The Pivot of Civilization', 'Margaret Sanger'),
    ('books/pg1732.txt.gz', '22c2f0998345e9120d0f65157218bd0adad9ca0e4ef2b50cd58216fcec113b80', 'c35d5e10e396cd94720e5f5c13154a42ac8ceeebdd17dbdd8d8e581f87596b8d', 382602, 63316, 'Chekhov, Anton Pavlovich/The Schoolmistress, and Other Stories.txt', 'The Schoolmistress and Other Stories', 'Anton Chekhov'),
    ('books/pg1739.txt.gz', '031ba9cb6f7ec8c3053f511b9e43c7fbcf3fd175ec4a3439760c0142acb4ef35', 'e3865452f574cb57ca26ceffaf9a12c55c90ee65272e63af9863734fa0a0119c', 286986, 43324, 'Morley, Henry/The Black Death, and The Dancing Mania.txt', 'The Black Death, and The Dancing Mania', 'Justus Friedrich Karl Hecker'),
    ('books/pg1858.txt.gz', 'c3f9a7db9e53032ae4c902dc31000a425123f611a5a42b3755f122692d777e6d', '4e6626f5a702911e79a92c96ed9a407139c654bf90666d45d2eec110c3ee6aaf', 432152, 71771, 'Kipling, Rudyard/Plain Tales from the Hills.txt', 'Plain Tales from the Hills', 'Rudyard Kipling'),
    ('books/pg1883.txt.gz', 'b1d512197d07706d6c6809cd34bbcb26d255c65d49db9fdb4a176e6a09271c72', '9fe875d928c00880d6c73f147ff3d084e283588d639789c56f506436f9296ae5', 455077, 76607, 'Chekhov, Anton Pavlovich/The Wife, and Other Stories.txt', 'The Wife and Other Stories', 'Anton Chekhov'),
    ('books/pg1900.txt.gz', '08502d9f58ddd118e5407cc6b48ec3926dfdf16d332ec150a7ce210c0f3a9703', 'ffae17584d8edf191005fced49b32da74349ddbafe297be72d3bf68c8bba90aa', 690542, 113371, 'Melville, Herman/Typee: A Romance of the South Seas.txt', 'Typee', 'Herman Melville'),
    ('books/pg1998.txt.gz', '92c051e7bce47922ff0df37b3485bd1b663d9a313e25056e4b688238967d15f3', 'd611fe41ae8da2f8d4161295ac89967582c168486da5af5126b4dbddc03ba8f2', 680761, 110925, 'Nietzsche, Friedrich Wilhelm/Thus Spake Zarathustra: A Book for All and None.txt', 'Thus Spake Zarathustra', 'Friedrich Nietzsche'),
    ('books/pg2005.txt.gz', '578f079e79cbb00e77f435d1ad5193d75b55fe257ccdcc1a358cf3813d90dbd4', '7027a4c873da3ebd203aa248f4ba8db50f990156c2bccc607f144612e3a85510', 480742, 80649, 'Wodehouse, P. G. (Pelham Grenville)/Piccadilly Jim.txt', 'Piccadilly Jim', 'P. G. Wodehouse'),
    ('books/pg2042.txt.gz', 'e6058a7a0d6ff0aab425ad01f95d0a7af4365b95c8266876b832d326ebf66910', '6306a91c07593b1b96d345f0ff18d1707aa6ad2ab65ae46779dc761fdc68daa4', 448844, 74740, 'Wodehouse, P. G. (Pelham Grenville)/Something New.txt', 'Something New', 'P. G. Wodehouse'),
    ('books/pg2060.txt.gz', 'b7df4a24388012f3d74120dd92c7d09d6de1ccbeb90b09c87d9f38482e3b0735', '44e5456c62c9ac3de30c3cb17ad5e959e4a1b0a4c5a152f9730f751f69cc3091', 242956, 37045, 'Morley, Henry/The History of Caliph Vathek.txt', 'The History of the Caliph Vathek', 'William Beckford'),
    ('books/pg2129.txt.gz', 'f7ec476dba66e13d023c9bc77c3d618e8cacf1e9870b72f7effc34f7c5b99287', 'd841699e176a6ccec5b024b73c47ca903a0d5c812c626cd864b04d108e7f9bb5', 292007, 47570, 'Morley, Henry/Murad the Unlucky, and Other Tales.txt', 'Murad the Unlucky and Other Tales', 'Maria Edgeworth'),
    ('books/pg2130.txt.gz', '52302490dcf806048e3eee46083d4ace10654518cb745a333f612ac38bf8db75', '1c024d368595c0c6ea8990517c916da2d6189e32fd7bd9f8f5d30de7ec7733aa', 260857, 43483, 'Morley, Henry/Utopia.txt', 'Utopia', 'Thomas More'),
    ('books/pg2173.txt.gz', '2cc1ed2abc8a0f2b5816084ec2e7fb5496a3a2113b3adafb0cab17d73c488b58', 'e7f1f8763cb07758e8e0bc6dd61c2baf5de6cba3427cfd2f8584ed0b99af37ce', 297073, 47047, 'Morley, Henry/Thoughts on the Present Discontents, and Speeches.txt', 'Thoughts on the Present Discontents', 'Edmund Burke'),
    ('books/pg2176.txt.gz', 'eaa4495ed4a76c33cfccb3de99d80d83cb5b8094b60ae9975c6afcf5c5a29208', '44d80f51efe8777f5d64ac1064c62adbee53bf58931d9cea73062fe93274c55e', 251696, 39560, 'Morley, Henry/Seven Discourses on Art.txt', 'Seven Discourses on Art', 'Joshua Reynolds'),
    ('books/pg2197.txt.gz', '240fe68ef5408f50ffcd737d79759f3066381aedbbfc4f68c159074166e0a785', 'c1da28034e2fdd0231e50f0df900887faa38a44d147d70dfaa2385da96639739', 357792, 60294, 'Dostoyevsky, Fyodor/The Gambler.txt', 'The Gambler', 'Fyodor Dostoyevsky'),
    ('books/pg2355.txt.gz', '31e74fee00382c226e6c5ef6c3b0182d84a53180f1d566ae0e1955bdfec668a4', '422a5fc8019a3223e09da07fbae164c67224ae65fa6a40dc73c8b001bb5103c5', 382656, 61391, 'Darwin, Charles/The Formation of Vegetable Mould Through the Action of Worms\\rWith Observations on Their Habits.txt', 'The Formation of Vegetable Mould', 'Charles Darwin'),
    ('books/pg2400.txt.gz', '886ab5de5f2ee90852b4dd5b29f8dd438404f5967ef18e1f9d2ffcfb5550752f', 'a4d0b128217c218c2565a7ad681e16e5229a0ed209acc348ae9f0bd1bb89dcb1', 478772, 77461, 'Burton, Richard Francis, Sir/Vikram and the Vampire: Classic Hindu Tales of Adventure, Magic, and Romance.txt', 'Vikram and the Vampire', 'Richard F. Burton'),
    ('books/pg2458.txt.gz', '10cbb536b4eb2a76779969d48338dfd40d1b89fd23db540365c6b9cf171ab25d', '624acaa65e7462ddbf0d6732c69ac3e4f61ffdd539911ba96805c1a0b52abf0b', 226089, 37246, 'Morley, Henry/Sermons on the Card, and Other Discourses.txt', 'Sermons on the Card and Other Discourses', 'Hugh Latimer'),
    ('books/pg2485.txt.gz', '661d27c563ae626e8ac7ddaae511324917f2b8561ad5acb4fa6f13f100af3894', '8f6b4f7d1ccdaa627d57f82172fe0b93476120b64cf2d79f4f99a03fb28f53bc', 345608, 52863, 'Darwin, Charles/The Movements and Habits of Climbing Plants.txt', 'The Movement and Habits of Climbing Plants', 'Charles Darwin'),
    ('books/pg2500.txt.gz', '9a1ba74dafce66ca4dc9e9f8181679d9b1d3afdc0d9be7a1f4cf11e9933120bd', 'fcdec325e8400e06bfeb3db92434891e9e12b20cda72ab19eabe4920c073f58e', 241176, 39158, 'Hesse, Hermann/Siddhartha.txt', 'Siddhartha', 'Herman Hesse'),
    ('books/pg2520.txt.gz', '256f1a1844ed27b712dcf5b2e35c48618154e4e4b49099f8ee392134fc4cdbd7', 'f8468cd9429e98203a3b28c84cf6ecb6e45aa07f0636d046d8a93105e7af556e', 597154, 105305, 'Stoker, Bram/The Man.txt', 'The Man', 'Bram Stoker'),
    ('books/pg2523.txt.gz', 'b5385f8c1c5f380ac272090b6ed03244ef538edec70ec1712d284278828aff63', '1ad05642051738b6dd5513c0304cf6192afed3cff42b94cabd5749cd53d8db13', 476449, 76898, 'Hugo, Victor/The Memoirs of Victor Hugo.txt', 'The Memoirs of Victor Hugo', 'Victor Hugo'),
    ('books/pg2527.txt.gz', '9d2308ffc2694be0f9812442187d0f531482efbf4d942fcd921bb1d5b7978157', '5e9eabd2d321a98d8f9f81fb114a68a1b11e7743879ee92b440e31dc9d6d85f4', 259380, 42512, 'Goethe, Johann Wolfgang von/The Sorrows of Young Werther.txt', 'The Sorrows of Young Werther', 'J.W. von Goethe'),
    ('books/pg2529.txt.gz', '434a1d7f3deb5533946c3d59e8a84792020b21fa79593524605bbb8d5aaf2500', '5444c346a0b7ca9f62499d9b028f5bd5974a8d688d60b15ca0b103a77eee3138', 549144, 89126, 'Russell, Bertrand/The Analysis of Mind.txt', 'The Analysis of Mind', 'Bertrand Russell'),
    ('books/pg2575.txt.gz', '919d5cde422c919fad16429693ba90eb9a362e9ddae252a271596caf4cbd1519', '4d9e76c5307139675bca5f3e2dcf18b7756f394cae28799e0b11fa0dee459f85', 284632, 43466, 'Morley, Henry/Confessions of an Inquiring Spirit and Some Miscellaneous Pieces.txt', 'Confessions of an Inquiring Spirit', 'Samuel Taylor Coleridge'),
    ('books/pg2591.txt.gz', 'dde3d1d3f33ce1b48944aee5aa79a5eca31d97a38a24fd9387f533ed795e31ec', '023835947f6a41880add3a7079ebdd9ae58b681958e8a327dee7133adba74ab4', 560159, 101127, "Grimm, Jacob/Grimms' Fairy Tales.txt", 'Grimms’ Fairy Tales', 'The Brothers Grimm'),
    ('books/pg2643.txt.gz', '26b7ff3eaeb99df4e8d8b284fc6b632032d5548daddefb08c8871a9c74393490', '80ec2103675eae31c7ea16273a4e707bfa346e29477223d4854c6ab046d0a712', 231860, 37285, 'Morley, Henry/The History of John Bull.txt', 'The History of John Bull', 'John Arbuthnot'),
    ('books/pg2644.txt.gz', '7b03f4bff8c76d10bcd98127a41e5bb3eb77a6333a3ce29fff36338ba576ec27', 'd4475e9b07f764fd8dda97705debf9afad6a432a7b9a31b7751b9d38b3a4ac48', 267510, 44331, 'Morley, Henry/Isaac Bickerstaff, Physician and Astrologer.txt', 'Isaac Bickerstaff', 'Richard Steele'),
    ('books/pg2660.txt.gz', '18abfbf179323ecfdf7b13c96d458e0f5b2e5f366bf49c7513adf30040bc1cba', 'bdf92950564ce38b91c947175a8fa03a1a4cf19a9ef01de6d3358bc495991822', 301507, 50367, 'Morley, Henry/Early Australian Voyages: Pelsart, Tasman, Dampier.txt', 'Early Australian Voyages', 'John Pinkerton'),
    ('books/pg2662.txt.gz', '8a69cca89d4dd33b951e62d106de6ade4fdb542529f8f439978222a82e02adfd', 'afd1a1b6d4cd176265602e73efe1736f52c43b241934c620dc3b63aa9c54f632', 353267, 57764, 'Hardy, Thomas/Under the Greenwood Tree; Or, The Mellstock Quire\\rA Rural Painting of the Dutch School.txt', 'Under the Greenwood Tree', 'Thomas Hardy'),
    ('books/pg2706.txt.gz', 'b6af17c4e9f735f2b37e735d67842ad56f901070d6910aefc8ab380910cd8644', 'cafab635fc9af5f255e5a4adb4a4baf33794ec9e3b910f5202f988549ce78d86', 229472, 34081, 'Morley, Henry/The Bravo of Venice: A Romance.txt', 'The Bravo of Venice', 'Heinrich Zschokke'),
    ('books/pg2726.txt.gz', '13a3a1e27a2ff9a1ff702dcca55c16b1e16d14168a5f07b47e02037b8dfe81de', 'a72dc5e3d9584e8660ade18447908dbb4a36bdbdc6b8b21fcb474268e718d4f3', 425184, 72942, 'Alcott, Louisa May/Eight Cousins.txt', 'Eight Cousins', 'Louisa M. Alcott'),
    ('books/pg2741.txt.gz', '3efe900c0a3e0b4a5133fb5ae0607e6c300cfd2e2bd8036f9f84dabf14aaaff8', '453f9e33040d97ba38ed71cc14388c990bb2ad976eddeb93d49b6f097bf12e9a', 496951, 82556, 'Dumas, Alexandre/The Borgias\\rCelebrated Crimes.txt', 'The Borgias', 'Alexandre Dumas, Pere'),
    ('books/pg2791.txt.gz', '4e979a6fc50fcabc6036f7ac0cfd1a23e0541127197812cfc0d0f509c2460d5b', '3d1c864fa2206055c586445d5545ec16b8a7aac65e746aee119e3561d20c2d9f', 280787, 45370, 'Morley, Henry/Essays and Tales.txt', 'Essays and Tales', 'Joseph Addison'),
    ('books/pg2814.txt.gz', '4975c06fba0774c6cbc1dff3aa903add98156567ec7ce77f624cb12e2d565b3a', '7c6f1416d01f2d016928820073a2ad1c683f52c0268833871f765312473752b7', 405821, 67577, 'Joyce, James/Dubliners.txt', 'Dubliners', 'James Joyce'),
    ('books/pg2822.txt.gz', '0620d33ddc3a13f656e9d4740d479472c770a7766037612ab6e15fe43240c548', 'c2707bb27f2e8c1bd8171729f469abe16f83a07bc6a46ca158084ad2543007b9', 261223, 40360, 'Defoe, Daniel/London in 1731.txt', 'London in 1731', 'Don Manoel Gonzales'),
    ('books/pg3150.txt.gz', '241feade3029d22c7d354e5ce839c018cd223c50f9d9a7ec0f0111e2ae4bd2a1', 'cb83fa528e777ed1063e7dbbe8c6e3811dc03f2412caf44d27f509dce1d9dcda', 294543, 46962, 'Morley, Henry/Human Nature, and Other Sermons.txt', 'Human Nature', 'Joseph Butler'),
    ('books/pg3429.txt.gz', 'd8d5c58af744a728fb8a403931238c991d564280d013732fe9fe5c8c2292d981', '8d87b2e8e18aad931075b2f34398bcfb20a41d98cb40dd35b8e84bd8e50628a0', 584404, 99963, 'Henty, G. A. (George Alfred)/St. George for England.txt', 'Saint George for England', 'G. A. Henty'),
    ('books/pg3482.txt.gz', '6b27bc0b84348ab19b2d433442450784eb7c6ef1f6ae23947215e9294e8175d5', '055eecb591a057e8fc7252ec183c706f4b325eb45a71a6eabcccd464f29598e2', 303508, 49943, 'Morley, Henry/Voyages in Search of the North-West Passage.txt', 'Voyages in Search of the North-West Passage', 'Richard Hakluyt'),
    ('books/pg3664.txt.gz', '1210bb388795a1e9defe622f7c30c8cb17096fe9cd3e45ddd223ed7cb96eed41', '803c395ff036c4930e2c415a24a8c61d010f5ffe68c11462ec2c780874bdbf5c', 161627, 24686, 'Maupassant, Guy de/Yvette.txt', 'Yvette', 'Henri Rene Guy de Maupassant'),
    ('books/pg3674.txt.gz', '9f6104cbdb82105950020ba96514a692894b252cd8237f655f05afcc76ebb7b1', '459144fe625b7c6c7bcaad840d072a654e89a690edc8ca61a6bc9f3a0bd3dffc', 482176, 82495, 'Henty, G. A. (George Alfred)/The Dragon and the Raven; Or, The Days of King Alfred.txt', 'The Dragon and the Raven', 'G. A. Henty'),
    ('books/pg3733.txt.gz', '086fbb7608cebd3f8032069d6b2c83498a740d69df17ddf80f02722061e71d7e', '8f062cb8c1a87c235c14912adbab2fe3114bd8420acd81fe6901e2bccf369b07', 313561, 51394, 'Maupassant, Guy de/Bel Ami; Or, The History of a Scoundrel: A Novel.txt', 'Bel Ami', 'Henri Rene Guy de Maupassant'),
    ('books/pg3787.txt.gz', '3e07f7c8af419d6c98dda327b1dafed088854a99d4ea93ccecccb2efaa849075', 'fccbbf5f02be7e97ca4e1e28649195e70d6e92b55c51a5a11190f29efef3ceb4', 293490, 46745, 'Morley, Henry/Nature and Art.txt', 'Nature and Art', 'Mrs. Inchbald'),
    ('books/pg3819.txt.gz', '0f9f4aac5cf5593eccf8ec9c0d993eb7e080492826a7b17e0720961074defa52', 'f5e36d22f8e4859e83a32d96cecd3dc6c50733aa07dc55518207f529b1335240', 322036, 52063, 'Lang, Andrew/The Euahlayi Tribe: A Study of Aboriginal Life in Australia.txt', 'The Euahlayi Tribe', 'K. Langloh Parker'),
    ('books/pg4045.txt.gz', '9d7f46ae8bf33513e81fbce25e3e8bae818ce4c702de0a6ab18ed2b9c88ad778', '3fde75da863da6dff14a888d8572688192d52de41cbf398ad36932910b930d20', 616246, 101736, 'Melville, Herman/Omoo: Adventures in the South Seas.txt', 'Omoo: Adventures in the South Seas', 'Herman Melville'),
    ('books/pg4217.txt.gz', 'be41fc65f53ac9cae773a803f56767c76c46ef489f1eec16ea2358ac87a2f7f2', 'b4871674b700ffd9bb596461bbcbe9df4e68e54cc3fdaee27b3bf60ac1c32b31', 496305, 84862, 'Joyce, James/A Portrait of the Artist as a Young Man.txt', 'A Portrait of the Artist as a Young Man', 'James Joyce'),
    ('books/pg4243.txt.gz', 'd8f08c88667fe30f95b9aebe849cdc9943f85dd8fa8908cffcf87a3200efba63', 'fb0407ba5f60c8585f0d357b48f13676b0025fd7db7912d9065ffdcf35ad6264', 252822, 38757, 'Morley, Henry/Sir Thomas More, or, Colloquies on the Progress and Prospects of Society.txt', 'Colloquies on Society', 'Robert Southey'),
    ('books/pg4245.txt.gz', '17f1259effb6926c4e280762c342c65cb35b9361bb5c1e00af768bfb1c86bdc9', '58fcf711ee26337762f791dee7c29f174f2a20b641a8aa0a6766e1b2b90a2dcb', 389075, 62258, 'Morley, Henry/A History of the Early Part of the Reign of James the Second.txt', 'A History of the Early Part of the Reign of James the Second', 'Charles James Fox'),
    ('books/pg4363.txt.gz', '677b0a836528ebbeaca534702de385cca61fe11b724b73f37d7c6319990dd095', 'd32b98f337029f46ad0b504a8d02196992f191c012bc8a748de2b8b30b09e8f9', 408806, 62678, 'Nietzsche, Friedrich Wilhelm/Beyond Good and Evil.txt', 'Beyond Good and Evil', 'Friedrich Nietzsche'),
    ('books/pg4776.txt.gz', '684d847944b7c0fd2fcc52ea7712de323d2a5b0c4c1153b5458e4ea8be591412', '742df81769be49dea4f111653d8cb709132eeb51734ee4b1e82187d29bad4a0e', 152660, 22265, 'Russell, Bertrand/Political Ideals.txt', 'Political Ideals', 'Bertrand Russell'),
    ('books/pg5202.txt.gz', '39d24f0e86dcc7a312ad3e7ed76e4af3d17ed97f625e6606435b6997fdab38bd', '98da3273765cde35ea7e989bb1b568c972545768bbe999af2485c982d07d89cf', 397708, 69573, 'Trollope, Anthony/The Golden Lion of Granpere.txt', 'The Golden Lion of Granpere', 'Anthony Trollope'),
    ('books/pg5894.txt.gz', '8a2805ac054e7ab53a97f2078e7d77cc5462076c7cd8c62925420bca1e9ca6a7', 'd586b52e65b620a5ea8e74e77b494b0856d00eda86149ee030d23adf775cbf09', 575878, 93996, 'Blackwood, Algernon/The Extra Day.txt', 'The Extra Day', 'Algernon Blackwood'),
    ('books/pg6149.txt.gz', 'cd15c825428875cb787e486d7d77ea454406a5d4a2f83e5e05c95ae1b078598d', '8a7f456de82a27a90c20115206093bc40972d63cd81e13105f2647682682daf0', 312038, 52225, "Goldfrap, John Henry/The Boy Aviators' Treasure Quest; Or, The Golden Galleon.txt", "The Boy Aviators' Treasure Quest", 'Captain Wilbur Lawton'),
    ('books/pg6626.txt.gz', '4d56b5b8ba121766ab61ddd097157ede813b8f4fb50c796555ad97dddea750e0', 'c3b13615969456096a617d54b166cd6e5b13522d5c6e5c2ca860795c5c46c69a', 433725, 70957, 'Zola, Émile/Theresa Raquin.txt', 'Therese Raquin', 'Emile Zola'),
    ('books/pg6905.txt.gz', 'ce2919deae8c619bbcacf786940a53fe946dfe7e7a426b9095027625d638359e', '645dbd11958030b00be08a6550e61a17841447c1faa1e915aaa1cda52bbd6175', 323921, 53134, 'Goldfrap, John Henry/The Boy Aviators in Africa; Or, an Aerial Ivory Trail.txt', 'The Boy Aviators in Africa', 'Wilbur Lawton'),
    ('books/pg7007.txt.gz', '95fd5b9f65f8447253c4d17faa14632674bb0e7ddf068567e1f03872708e0daf', '21e85cf1e319e63e8547cb1da5efd1a59e73f8adeafc38f72ed3de90ce6dfead', 385468, 65217, 'Andersen, H. C. (Hans Christian)/The True Story of My Life: A Sketch.txt', 'The True Story of My Life', 'Hans Christian Andersen'),
    ('books/pg7849.txt.gz', 'd1be38ce3b1c7d58688002ece846ad0690036dd111304a00c5c314177088e070', '2538264faef772de26e4815adf159dd8884e69738b3374a9404457d53c2573a6', 481134, 84197, 'Kafka, Franz/The Trial.txt', 'The Trial', 'Franz Kafka'),
    ('books/pg7948.txt.gz', '1f25186ff3e51b04bdc64980dd00d164c2c35fc8dce731e551d99b5e2985b959', '5a76a6da363f5d3c084752178acbc19d2c22e4d9c6061325b343d9972257eb94', 306444, 49515, 'Irving, Washington/Abbotsford and Newstead Abbey.txt', 'Abbotsford and Newstead Abbey', 'Washington Irving'),
    ('books/pg7994.txt.gz', 'be48b40a73f6b3110845223fd830f89da4454c1185df6dbf443caeb71113e7fc', 'af971d708964c88eebec30e24362383c53a7d685240ca99f40095924539ab0ce', 505216, 83381, 'Irving, Washington/The Crayon Papers.txt', 'The Crayon Papers', 'Washington Irving'),
    ('books/pg9499.txt.gz', '8d70342495b5a28bee12356d80d1e9a18d4339f232dce7a8a738c4969dad8fb4', '9a054889e274da623fcf21b6616ededef23c3bee94a400b9e520e55bf2f65084', 522979, 88353, 'Zola, Émile/The Dream.txt', 'The Dream', 'Emile Zola'),
    ('books/pg9846.txt.gz', 'e70d876a1633633468e59ce71c4aa4ee2e3e1769cc5e4803a14658900c71d34b', '3e516c0781c10aa442fd6bfce7cb9c013485787d9f796b2bc10de8332a3fa5a4', 427169, 71555, 'Thoreau, Henry David/Excursions.txt', 'Excursions', 'Henry D. Thoreau'),
    ('books/pg10624.txt.gz', '988624bc47f585b4ed82290e7011f4c1c6282d1e814265f33fa92004f5ecbe86', '57eeca59cd9ad17618d618ec9e1cd54cfe56308aa8294e8868035bdf1729bcff', 402474, 66344, 'Blackwood, Algernon/Three John Silence Stories.txt', 'Three John Silence Stories', 'Algernon Blackwood'),
    ('books/pg15238.txt.gz', '7d014ff8877e3c9d71c6efb6a148821289498b1d863b69db284916a9eb4ecef3', 'af059266859eeb5594f954a015e2a0772b2ca6e148a8f2f65ec621a9e08cb0bd', 287779, 48068, 'Shelley, Mary Wollstonecraft/Mathilda.txt', 'Mathilda', 'Mary Wollstonecraft Shelley'),
    ('books/pg18972.txt.gz', 'a5f744cea6bc67bc36ad5cc45bd394d1c067b03cc0babbb1c250a02172a0bb09', '88bd44a57c0db9a04460bb88af7607ccb8b21cea4ee70b230ec8dd016d3cab37', 199997, 31272, 'Voltaire/Zadig; Or, The Book of Fate.txt', 'Zadig', 'Voltaire'),
    ('books/pg19068.txt.gz', '1dcc6369afe9795284a3b444c6d13cc4ff47335ff8ebee9b7afd8819dd40fc30', '6d98c2a81a891df22b32ad99265bc3939c7059615bff31b6f38d3b5fa7a1c88b', 496265, 88778, 'Grimm, Jacob/Household Stories by the Brothers Grimm.txt', 'Household Stories by the Brothers Grimm', 'Jacob Grimm and Wilhelm Grimm'),
    ('books/pg19942.txt.gz', '76a71be0bc2368bf1c2d670a928af5ddb805a5f718e2e684280fc712e80939ae', '72fa751d397d81b99f2cacfcca9901b012e6781633d94da95351556a568b25d1', 229769, 35887, 'Voltaire/Candide.txt', 'Candide', 'Voltaire'),
    ('books/pg20580.txt.gz', '1b9c54ed2906841eacc58ea2e05b66b5dcdb6b292af537b3647ecb5182d48142', 'ad7a3dd5096b72965aa631e903e59023a8ea2e0f88caa94562dcc168198f2a1f', 468871, 74279, 'Hugo, Victor/Napoleon the Little.txt', 'Napoleon the Little', 'Victor Hugo'),
    ('books/pg23244.txt.gz', '5a51dce5eb49c87f410f802358a9c11cf37b520a1faf425933201c0f5fe41d29', '001b0ae9f97ecc750312383d86c397902ca6d7f57bc5e5692185f32758f99c6f', 447593, 73271, 'Lockhart, Caroline/The Dude Wrangler.txt', 'The Dude Wrangler', 'Caroline Lockhart'),
    ('books/pg23304.txt.gz', '526311d13237e3684340d5ff04d2a970a66e5331ecf6d1cb7ae839bacb5f641c', '9eaa77697997d035f934e3b438f94407325bdd881f26b37947caea7620cd38ed', 523145, 85727, 'Hoskins, Gayle Porter/The Lady Doc.txt', 'The Lady Doc', 'Caroline Lockhart'),
    ('books/pg24754.txt.gz', '4036116250bad5418d02c8129621f43f03911c08a79a00875d181a4d52805d3b', '2816ab5eea1a1e29e35a2cda9c212531816ddb183177d2ccf0bebcb505f16b82', 478136, 79126, 'Cervantes Saavedra, Miguel de/Wit and Wisdom of Don Quixote.txt', 'Wit and Wisdom of Don Quixote', 'Miguel de Cervantes Saavedra'),
    ('books/pg33670.txt.gz', 'f95b9accd5daa76670e33af2b3eb59689799caac927bd73170c6b7e2cd32a8bc', '2e88882ed2d82aed6723cdb182fa11e8ef475a726fffaaf419b4a5e67875023f', 208077, 32585, 'Goethe, Johann Wolfgang von/Maxims and Reflections.txt', 'Maxims and Reflections', 'Johann Wolfgang von Goethe'),
    ('books/pg41445.txt.gz', '3780f86241531680be7722360cc12e15f3ba49ca1bcd45bde5cd722ebb8f280a', 'd8b2758ba135ba2c2be828e01d4bd3f3c169dd2d55f0ad4c345daf0673004964', 437726, 72725, 'Shelley, Mary Wollstonecraft/Frankenstein; Or, The Modern Prometheus.txt', 'Frankenstein', 'Mary Shelley'),
    ('books/pg45515.txt.gz', '8d179e48353d05e16ef10b6e9b1a4f070b43f73f33b5f062b8a9231208acd984', '426bf57b4d318d685121dd667e96fb07cf3ec77db76929bb93b42c965d7f1325', 154362, 23540, 'Franklin, Benjamin/Experiments and Observations on Electricity Made at Philadelphia in America.txt', 'Experiments and Observations on Electricity made at Philadelphia in America', 'Benjamin Franklin'),
    ('books/pg51060.txt.gz', '7f4b4a3d0875a8ef6109f7163964a1d5d3696ff595939830f254995dafa1db6b', '003a82eed905a611909d83df9c534fc269352e9cd69d791b90c912a4d4152733', 430096, 71349, 'Poe, Edgar Allan/The Narrative of Arthur Gordon Pym of Nantucket\\rComprising the details of a mutiny and atrocious butchery on board the American brig Grampus, on her way to the South Seas, in the month of June, 1827..txt', 'The Narrative of Arthur Gordon Pym of Nantucket', 'Edgar Allan Poe'),
    ('books/pg57208.txt.gz', 'ac7a92c572ffb930720f58a246bed68af837c3f68a83b93094d9820622b31aea', '33eb8110881cd8a14c0492c5aa71ee70a3cfd7790f1a13ff55fe48b41ce702b8', 555633, 85491, 'Burton, Richard Francis, Sir/The Jew, The Gypsy and El Islam.txt', 'The Jew, The Gypsy and El Islam', 'Richard F. Burton'),
    ('books/pg59981.txt.gz', 'c9e3a99407f419b21d6e01dc23247708ceaa6fc6432a4cb789496495f1daa82e', 'f75b7c14be35aca39b139271595b02a3ef083fd0250351caa83a075efb5cddfb', 435741, 69417, 'Bunin, Ivan Alekseevich/The Village.txt', 'The Village', 'Ivan Bunin'),
    ('books/pg59987.txt.gz', 'd5218fd2fb2f2728b2978bdceb7b863b33e195fe1e570abd6f77ad764158a3c0', 'b8abd93fa8d4295874f664de3461afa638c15ce93ebd967287f09eb59a3da1c8', 500133, 84645, 'Haslett, Elmer/Luck on the WingThirteen Stories of a Sky Spy.txt', 'Luck on the Wing', 'Elmer Haslett'),
]

_WIKI = [
    # (path, sha256 of .gz, sha256 of raw text, raw bytes, words, source path)
    ('wiki/AA_wiki_00.txt.gz', '423cf55b2fa42e874305dd1da8630d1a00d08653f22f0ef8c93f6dffeecb8721', '5a4fff08b6dd4322bcc7482c291d7fae87b74d2977f1fd334ab134ff2a343357', 1034599, 161037, 'text/AA/wiki_00'),
    ('wiki/AA_wiki_25.txt.gz', '55d391b76addb3252c86937da9be6fe4716699a4cd01b8882067593af3cb121f', '8e65a9f16fd89316998084c17591a17e0fe4ef50254fa78d4bb219f34ec60d26', 1013408, 161975, 'text/AA/wiki_25'),
    ('wiki/AA_wiki_50.txt.gz', '4977257bfaa3812e16c2a79bee380f79a6a993bae2b5aed1715bc060a88cb989', '80b3334f63c96f8a8ad656c2826ea2717991687aaa0564163e61603c7f4abadb', 1035874, 162643, 'text/AA/wiki_50'),
    ('wiki/AA_wiki_75.txt.gz', '125dde8509f0efcabeb09475857adec928ce7c99b29af955c01cfd2f3bb32ed0', '6256461a588a9c0d62654de835104a43e76a00e4d8e95d2587bc14e3a833ec96', 1045767, 162033, 'text/AA/wiki_75'),
    ('wiki/AB_wiki_00.txt.gz', '9f9509c1556a0e7fffbe44921bd5d6092d0461f2ef36f80bff7337dafda09cee', '2bdf3433a915ee8f197bc7801a3a36809714963720394a2c974c281e513f2115', 1005347, 160635, 'text/AB/wiki_00'),
    ('wiki/AB_wiki_25.txt.gz', '52e06047e2769eb5b40737ad7b3be21bc5e5c4839aadfc167763da2a7285bde3', 'b90ca49a9aa52d90721963975fab5c39d2197e59c542575dbde5f4c27d8bf95b', 1044834, 168783, 'text/AB/wiki_25'),
    ('wiki/AB_wiki_75.txt.gz', '7772fa6243a3076efc27b6cc476fc1713480c10238fea0d3205c915fbb94542b', '76f17b2e8c7327fea477b51d33e5cb34e5394eee779523354e369387f680724f', 1033905, 162285, 'text/AB/wiki_75'),
    ('wiki/AC_wiki_00.txt.gz', '454bccdc61d7637d976886c6d8188015498287ee182fe299545e9bf1d852a635', '87cd25171b4fc601e3b86b27e2c4549753d485ab9bb543183c236bb9886d1e8a', 1023692, 162908, 'text/AC/wiki_00'),
    ('wiki/AC_wiki_25.txt.gz', 'fd1bc809e8cfbe7ae900e5d28eac24c95080340ab536da2bc7375cf5d6ace97a', 'f4119a7cc218a56b4ad27ab9ec0784d9819e77887b071a4c4a1d35dc6055a69f', 1048115, 162458, 'text/AC/wiki_25'),
    ('wiki/AC_wiki_50.txt.gz', 'ff81dbaba9cb3eff5d3b2a692a527fddeb74eaf7bfd39f78739c7a7886c075a2', '7060d3e12f18d9e176c2a2f8b2fc055ea1b653d2d6c7d893085038735753831f', 1039673, 164530, 'text/AC/wiki_50'),
    ('wiki/AC_wiki_75.txt.gz', '22a6ceb8eecfa9888cce9859752c442f3206a21690259e0754a671b723d31e0b', '8bbb4c278f7586eb768adec59fd3548100f2f75eca37bd8357548beccbba512b', 1026606, 162787, 'text/AC/wiki_75'),
    ('wiki/AD_wiki_00.txt.gz', '253d2559c45d43318aaef8f956f8fcb46bab45bd7ee0caaaf371b9f80271a350', '45feb1a4a2adfba55c2970b373c8253078b5bb933f49ed74319698bfbe0221df', 1025010, 160807, 'text/AD/wiki_00'),
    ('wiki/AD_wiki_25.txt.gz', '76cd39239cf1013bfc099026f388889faa316891cb9c23c86c6e6e3603225066', '98fae77bc606ff6634169dfea85cfc411562c92357fc65ab5d6eac3d293ef8c0', 1045325, 166204, 'text/AD/wiki_25'),
    ('wiki/AD_wiki_50.txt.gz', 'a4fe2a6919a679cc94fa71231877231fc78e61a8bf22025c9f99dd85bfe4b492', 'e76eb8a16f1fa922303e70fb60de726b4a301c3c93727e82e7d3576064bb7105', 1047566, 167020, 'text/AD/wiki_50'),
    ('wiki/AD_wiki_75.txt.gz', 'c139d61e29a601a81f5ed709cc037cbffefa5aa2d7ca6e4c966df41c0848cb83', '34f1ac34e018c46ed767d8f9c202d77470832405dd1aa715ec9b9807de9089bf', 1047744, 164780, 'text/AD/wiki_75'),
]


def _book(row: tuple) -> DataFile:
    path, gz_sha, raw_sha, raw_bytes, _words, source_path, _title, _author = row
    number = path.split("/pg")[1].split(".")[0]
    source_path = source_path.replace("\\r", "\r")  # MANIFEST writes a literal CR in three file names as \r
    return DataFile(
        path=path, dataset="books", split=f"pg{number}", sha256=gz_sha, size=None, in_mirror=True,
        licence=PD_US, url=f"https://www.gutenberg.org/cache/epub/{number}/pg{number}.txt",
        sources=(
            Source(_BOOKS_RAW + quote(source_path), "sha256:" + raw_sha,
                   note="the 2019 copy this registry pins, byte for byte"),
            Source(f"https://www.gutenberg.org/cache/epub/{number}/pg{number}.txt", "sha256:" + raw_sha,
                   note="Project Gutenberg has since regenerated its files: expect a checksum mismatch"),
        ),
        gzip=True, raw_sha256=raw_sha)


def _wiki(row: tuple) -> DataFile:
    path, gz_sha, raw_sha, raw_bytes, _words, source_path = row
    return DataFile(
        path=path, dataset="wiki", split=path.split("/")[1].split(".")[0], sha256=gz_sha, size=None,
        in_mirror=True, licence=WIKI_LICENCE, url="https://dumps.wikimedia.org/enwiki/ (2015 dump, no longer hosted)",
        sources=(Source(_WIKI_RAW + source_path, "sha256:" + raw_sha,
                        note="WikiExtractor 2.33 output committed to jason-feng/wikiVisual, later deleted there"),),
        gzip=True, raw_sha256=raw_sha)


#: Every registered file, keyed by its mirror path.
FILES: dict[str, DataFile] = {f.path: f for f in [*_FIXED, *map(_book, _BOOKS), *map(_wiki, _WIKI)]}

#: Books metadata (title, author, raw bytes, words), keyed by the book's split name ("pg11").
BOOK_INFO: dict[str, dict] = {
    f"pg{row[0].split('/pg')[1].split('.')[0]}": {"title": row[6], "author": row[7], "raw_bytes": row[3], "words": row[4]}
    for row in _BOOKS
}

DATASETS: tuple[str, ...] = tuple(dict.fromkeys(f.dataset for f in FILES.values()))
