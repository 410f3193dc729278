# The spec's tuned-table files ([[kernel]] tuning = [...]): paths relative to the spec, globs,
# missing files named with the spec and the path, and what the manifest records.
import pytest

from conftest import base_spec
from taot.errors import SpecError
from taot.library.manifest import relative


def tables(project, *names):
    for name in names:
        path = project.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"1": {"num_warps": 4}}\n')


def load_with(project, tuning):
    spec = base_spec()
    spec["kernel"][0]["tuning_key"] = ["n"]
    spec["kernel"][0]["tuning"] = tuning
    return project.load(spec).kernels[0]


def error_with(project, tuning):
    with pytest.raises(SpecError) as caught:
        load_with(project, tuning)
    return str(caught.value)


def test_files_and_globs_in_order_each_once(project):
    tables(project, "tables/b.json", "tables/a.json", "tables/notes.txt", "vllm/E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3,"
           "dtype=fp8_w8a8,block_shape=[128,128].json")
    vllm = "vllm/E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128,128].json"
    kernel = load_with(project, [vllm, "tables/*.json", "tables/a.json"])
    root = project.root.resolve()
    assert kernel.tuning == (root / vllm, root / "tables/a.json", root / "tables/b.json")
    assert load_with(project, "tables/b.json").tuning == (root / "tables/b.json",)  # one path alone


def test_no_tuning_key_means_no_files(project):
    assert project.load(base_spec()).kernels[0].tuning == ()


def test_a_missing_file_names_the_spec_and_the_path(project):
    missing = (project.root / "tables/h100.json").resolve()
    assert error_with(project, ["tables/h100.json"]) == (
        'spec.toml: kernel[0].tuning[0]: expected a tuned-table file (a path relative to the spec file; globs such '
        f'as "tables/*.json" allowed), got "tables/h100.json", which does not exist ({missing})')
    tables(project, "tables/a.json")
    assert error_with(project, ["tables/a.json", "tables/*.jsn"]) == (
        'spec.toml: kernel[0].tuning[1]: expected a tuned-table file (a path relative to the spec file; globs such '
        f'as "tables/*.json" allowed), got "tables/*.jsn", which matches no file (in {project.root.resolve()})')
    assert error_with(project, [3]).startswith("spec.toml: kernel[0].tuning[0]: expected a tuned-table file")
    assert error_with(project, []) == "spec.toml: kernel[0].tuning: expected a non-empty list of tuned-table files, " \
                                      "got an empty list"


def test_the_manifest_records_paths_relative_to_its_folder(project):
    tables(project, "tables/a.json")
    kernel = load_with(project, ["tables/a.json"])
    out = project.root.resolve() / "out"
    assert [relative(path, out) for path in kernel.tuning] == ["../tables/a.json"]
