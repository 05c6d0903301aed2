'use strict';
document.documentElement.dataset.state = 'ready';
