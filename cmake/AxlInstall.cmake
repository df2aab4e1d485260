# install rules: see AxlInstall
