# ReFrame configuration of the kit: `make lab-up` exports RFM_CONFIG_FILES pointing
# here. The systems come from the running lab and the lab files (pfslab.rfmconfig).
# The kit's package comes from the environment ReFrame runs in (.venv, `make deps`).
from pfslab import rfmconfig

site_configuration = rfmconfig.build()
