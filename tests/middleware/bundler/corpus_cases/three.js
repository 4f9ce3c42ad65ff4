import { Vector3, Matrix4, Quaternion, Euler, Box3, MathUtils, BufferGeometry, BoxGeometry } from 'three';
const v = new Vector3(1, 2, 3).applyMatrix4(new Matrix4().makeRotationY(Math.PI / 2));
print(v.toArray().map((x) => x.toFixed(3)).join(','));
const q = new Quaternion().setFromEuler(new Euler(0.1, 0.2, 0.3));
print(q.toArray().map((x) => x.toFixed(4)).join(','));
const g = new BoxGeometry(2, 4, 6); g.computeBoundingBox();
print(JSON.stringify(g.boundingBox.max) + ' ' + g.attributes.position.count + ' ' + MathUtils.radToDeg(Math.PI));
print(new Box3().setFromPoints([new Vector3(), new Vector3(1, 1, 1)]).getSize(new Vector3()).length().toFixed(4) + ' ' + (g instanceof BufferGeometry));
