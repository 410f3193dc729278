"""What the front end prints for an OSError: the path and what was wrong, and for a full disk met
while writing an open file (no path in the error) the command's output folder."""
import errno

from taot.cli import describe_os_error


def test_a_path_is_named_with_what_was_wrong():
    error = FileNotFoundError(errno.ENOENT, "No such file or directory", "/x/spec.toml")
    assert describe_os_error(error) == "/x/spec.toml: no such file or folder"


def test_a_full_disk_without_a_path_names_the_output_folder():
    error = OSError(errno.ENOSPC, "No space left on device")
    assert describe_os_error(error, "tiny/out") == ("tiny/out: No space left on device (while writing there; free "
                                                    "space and run the command again: what is done is kept)")
    assert describe_os_error(error) == "No space left on device"
