# ReFrame configuration of the kit: `make lab-up` exports RFM_CONFIG_FILES pointing
# here. The systems come from the running lab and the lab files (pfslab.rfmconfig).
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pfslab import rfmconfig  # noqa: E402

site_configuration = rfmconfig.build()
