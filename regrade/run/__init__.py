"""A whole run graded: its settings (settings.py), the results cache (cache.py), what a case worker
does (job.py), the local pool of case workers (pool.py), the same on a Dask cluster
(dask_cluster.py), and the run itself, nothing lost and the results file written once (rescore.py).

The names a caller needs are here: ``from regrade.run import rescore_settings, rescore_run``.
"""

from regrade.run.cache import ResultCache, cache_key, default_cache_dir
from regrade.run.rescore import rescore_run, rescore_to_file, run_provenance
from regrade.run.settings import RescoreSettings, SettingsError, case_limit_s, rescore_settings

__all__ = ["ResultCache", "RescoreSettings", "SettingsError", "cache_key", "case_limit_s", "default_cache_dir",
           "rescore_run", "rescore_settings", "rescore_to_file", "run_provenance"]
