import subprocess
import sys


def test_importing_paperworks_imports_no_torch_or_transformers():
    code = ("import sys, paperworks, paperworks.results, paperworks.stats; "
            "heavy = [m for m in ('torch', 'transformers', 'tokenizers', 'paperworks.lm') if m in sys.modules]; "
            "assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True)
