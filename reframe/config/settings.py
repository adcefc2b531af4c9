# ReFrame configuration of the kit: `make lab-up` exports RFM_CONFIG_FILES pointing
# here. The systems come from the running lab and the lab files (pfslab.rfmconfig).
# The kit's package comes from the environment ReFrame runs in (.venv, `make deps`).
from pfslab import rfmconfig
# Registers the lab-mpirun launcher the partitions name, before ReFrame reads them.
from pfslab import rfm_launcher  # noqa: F401

site_configuration = rfmconfig.build()
